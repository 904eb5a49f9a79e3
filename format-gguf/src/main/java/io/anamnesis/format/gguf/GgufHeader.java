package io.anamnesis.format.gguf;

import java.nio.ByteOrder;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;

/**
 * Everything before a GGUF file's data section: {@code gguf_header_t}, the tensor infos, and
 * where the (aligned) data section starts.
 *
 * @param version   1, 2 or 3
 * @param byteOrder the order of every number in the file (big-endian files exist for s390x)
 * @param metadata  the key/values in file order
 * @param tensors   the tensor infos in file order
 * @param alignment {@code general.alignment}, or 32
 * @param dataStart file offset of the data section
 */
public record GgufHeader(int version, ByteOrder byteOrder, SequencedMap<String, GgufValue> metadata,
                         List<GgufTensorInfo> tensors, long alignment, long dataStart) {
    public static final long DEFAULT_ALIGNMENT = 32;

    public GgufHeader {
        metadata = Collections.unmodifiableSequencedMap(new LinkedHashMap<>(metadata));
        tensors = List.copyOf(tensors);
    }
}
