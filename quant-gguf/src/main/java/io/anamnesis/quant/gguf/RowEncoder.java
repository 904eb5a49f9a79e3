package io.anamnesis.quant.gguf;

/**
 * Encodes F32 rows into one ggml type's blocks: the mirror of
 * {@link GgufBlockType.BlockDecoder}, and the shape of ggml's {@code ggml_quantize_chunk}
 * (whole rows, an optional importance weight per column). An encoder is a pure function:
 * the same rows and weights always give the same bytes, on any thread, in any order.
 *
 * <p>One limit of "byte-identical to ggml": a NaN that carries a payload (low mantissa bits
 * other than the quiet bit). ggml reads some levels from the bits of {@code x + 1.5 * 2^23}
 * ({@code nearest_int}), so such a NaN's payload can become a level; Java does not promise to
 * carry NaN payloads through arithmetic, and such levels were seen to differ from ggml's, and
 * from one run to the next as the JIT compiled the encoder. The NaNs arithmetic makes
 * ({@code 0x7FC00000}, {@code 0xFFC00000}) give ggml's bytes in both the scalar and the
 * Vector API encoders, with one exception: Q4_0 and Q5_0 with an importance matrix, in a row
 * that holds NaNs of both signs. Their weights take the row's mean square, a NaN there, and
 * which of the row's NaNs a sum of two NaNs keeps is the order of the add's operands, which
 * C fixes and Java's JIT does not: the block scale is then a NaN of either sign (the levels
 * are ggml's).
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
