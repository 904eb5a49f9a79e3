package io.anamnesis.api;

import java.nio.channels.FileChannel;
import java.util.Objects;

/**
 * Where a tensor's bytes lie in an open file exactly as {@link TensorArchive#data} gives them:
 * contiguous, row-major, little-endian, uncompressed. A writer that copies such a tensor
 * unchanged can then have the kernel copy it file to file ({@code copy_file_range}) instead
 * of mapping it and copying it through memory.
 *
 * @param file   the archive's open channel on the file (read with positional calls only)
 * @param offset the byte offset of the tensor's first byte in the file
 */
public record StoredRegion(FileChannel file, long offset) {
    public StoredRegion {
        Objects.requireNonNull(file, "file");
        if (offset < 0) throw new IllegalArgumentException("negative offset " + offset);
    }
}
