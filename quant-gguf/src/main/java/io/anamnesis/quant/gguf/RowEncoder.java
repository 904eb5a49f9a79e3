package io.anamnesis.quant.gguf;

/**
 * Encodes F32 rows into one ggml type's blocks: the mirror of
 * {@link GgufBlockType.BlockDecoder}, and the shape of ggml's {@code ggml_quantize_chunk}
 * (whole rows, an optional importance weight per column). An encoder is a pure function:
 * the same rows and weights always give the same bytes, on any thread, in any order.
 */
@FunctionalInterface
interface RowEncoder {
    /**
     * Encodes {@code rows} rows of {@code perRow} values each, read from {@code src} at
     * {@code srcOffset}, into {@code dst} at {@code dstOffset} ({@code rows * perRow /
     * blockElements * blockBytes} bytes). {@code perRow} is a multiple of the type's block size.
     *
     * @param importance null, or {@code perRow} non-negative weights, one per column (a row of
     *                   llama.cpp's importance matrix), the {@code quant_weights} of ggml
     */
    void encode(float[] src, int srcOffset, byte[] dst, int dstOffset, int rows, int perRow, float[] importance);
}
