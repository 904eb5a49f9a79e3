package io.anamnesis.format.safetensors;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.spi.FileProbe;
import io.anamnesis.api.spi.HeaderStream;
import io.anamnesis.api.spi.FormatReader;
import io.anamnesis.api.spi.RangeChannel;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

/**
 * Reads {@code .safetensors} files. {@link #open} reads the 8-byte prefix and the JSON header
 * with positional reads and never touches tensor bytes; each tensor is later memory-mapped on
 * its own, so files of any size open in the time it takes to parse the header.
 */
public final class SafetensorsReader implements FormatReader {

    @Override
    public String format() {
        return "safetensors";
    }

    @Override
    public List<String> fileExtensions() {
        return List.of("safetensors");
    }

    @Override
    public String description() {
        return "Hugging Face safetensors: header-only open, zero-copy memory-mapped tensors, every spec dtype";
    }

    /** An 8-byte little-endian length N with {@code 2 <= N <= size - 8}, followed by an opening brace. */
    @Override
    public boolean canRead(FileProbe probe) {
        ByteBuffer head = probe.bytes();
        if (head.remaining() < SafetensorsHeader.PREFIX_BYTES + 1) return false;
        long n = head.getLong(0);
        long size = probe.size();
        return Long.compareUnsigned(n, 2) >= 0
                && Long.compareUnsigned(n, size - SafetensorsHeader.PREFIX_BYTES) <= 0
                && head.get(SafetensorsHeader.PREFIX_BYTES) == '{';
    }

    @Override
    public TensorArchive open(Path path, ParseLimits limits) {
        FileChannel channel;
        try {
            channel = FileChannel.open(path, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            throw new TensorIOException("no such file: " + path, e);
        } catch (IOException e) {
            throw new TensorIOException("cannot open " + path + ": " + e.getMessage(), e);
        }
        boolean ok = false;
        try {
            SafetensorsHeader header = readHeader(channel, limits);
            SafetensorsArchive archive = new SafetensorsArchive(path, channel, header, limits);
            ok = true;
            return archive;
        } catch (IOException e) {
            throw new TensorIOException("cannot read " + path + ": " + e.getMessage(), e);
        } finally {
            if (!ok) {
                try {
                    channel.close();
                } catch (IOException ignored) {
                    // the parse failure is what the caller needs to see
                }
            }
        }
    }

    /**
     * The header from a stream, exactly {@code 8 + N} bytes; the archive has the metadata and
     * the tensor index, and no tensor data (however much the header declares).
     */
    @Override
    public TensorArchive openHeader(InputStream in, ParseLimits limits) {
        return new SafetensorsArchive(null, new HeaderStream(in), SafetensorsHeader.read(in, limits), limits);
    }

    /**
     * The header of a file read by range requests, with the checks a local file gets (the
     * data section must end at the file's size): the prefix and the JSON header are asked for
     * in two reads, so a header of any length costs at most one fetch after the first probe.
     */
    @Override
    public TensorArchive openHeader(RangeChannel channel, ParseLimits limits) {
        try {
            return new SafetensorsArchive(null, channel, readHeader(channel, limits), limits);
        } catch (IOException e) {
            throw new TensorIOException("cannot read " + channel.fileName() + ": " + e.getMessage(), e);
        }
    }

    /** Prefix and header from the channel, every size checked against the file before allocation. */
    static SafetensorsHeader readHeader(FileChannel channel, ParseLimits limits) throws IOException {
        long size = channel.size();
        if (size < SafetensorsHeader.PREFIX_BYTES) {
            throw new MalformedFileException("file is " + size + " bytes, too short for the 8-byte header length");
        }
        byte[] prefix = new byte[SafetensorsHeader.PREFIX_BYTES];
        readFully(channel, ByteBuffer.wrap(prefix), 0);
        // A file that is not safetensors at all (text under a .safetensors name) would read
        // as a huge length; the header's first byte says which it is before the limit does.
        ByteBuffer first = ByteBuffer.allocate(1);
        if (size > SafetensorsHeader.PREFIX_BYTES) readFully(channel, first, SafetensorsHeader.PREFIX_BYTES);
        if (size == SafetensorsHeader.PREFIX_BYTES || first.get(0) != '{') {
            throw new MalformedFileException("not a safetensors file: the 8-byte header length is not followed by"
                    + " a JSON object ('{')");
        }
        // The limit comes first (the reference's HeaderTooLarge), then the file size.
        int n = SafetensorsHeader.headerLength(prefix, limits);
        if (n > size - SafetensorsHeader.PREFIX_BYTES) {
            throw new MalformedFileException("header length " + n + " runs past the end of the file ("
                    + size + " bytes)");
        }
        byte[] bytes = new byte[n];
        readFully(channel, ByteBuffer.wrap(bytes), SafetensorsHeader.PREFIX_BYTES);
        SafetensorsHeader header = SafetensorsHeader.parse(bytes, limits);
        long present = size - header.dataStart();
        if (header.dataBytes() > present) {
            SafetensorsHeader.Tensor last = header.tensors().getLast();
            throw MalformedFileException.inTensor(last.name(), "data_offsets end at " + last.end()
                    + ", past the " + present + " data bytes the file holds");
        }
        if (header.dataBytes() < present) {
            throw new MalformedFileException("the tensors cover " + header.dataBytes() + " data bytes but the file holds "
                    + present + "; safetensors data must end exactly at the end of the file");
        }
        return header;
    }

    private static void readFully(FileChannel channel, ByteBuffer dst, long position) throws IOException {
        while (dst.hasRemaining()) {
            int r = channel.read(dst, position);
            if (r < 0) throw new MalformedFileException("file ends while reading the header (it shrank?)");
            position += r;
        }
    }
}
