package io.anamnesis.format.gguf;

import io.anamnesis.api.Shape;

/**
 * {@code gguf_tensor_info_t}: a tensor's name, its dimensions as stored ({@code ne[0]} is
 * the innermost, a row's length), its type and its offset from the start of the data section.
 *
 * @param byteSize bytes the tensor's data take, {@code ne[0]/block * blockBytes * ne[1] * ...}
 */
public record GgufTensorInfo(String name, long[] ne, GgufType type, long offset, long byteSize) {
    public GgufTensorInfo {
        ne = ne.clone();
    }

    @Override
    public long[] ne() {
        return ne.clone();
    }

    /** The row-major shape anamnesis shows: {@code ne} reversed. */
    public Shape shape() {
        return Shape.of(ne).reversed();
    }
}
