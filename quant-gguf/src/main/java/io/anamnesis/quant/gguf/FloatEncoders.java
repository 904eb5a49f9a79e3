package io.anamnesis.quant.gguf;

import io.anamnesis.api.numeric.Floats;

/**
 * The plain float targets of {@code ggml_quantize_chunk}: F32 is copied, F16 is
 * {@code ggml_fp32_to_fp16_row} (round to nearest even, every NaN to the quiet NaN 0x7E00
 * with its sign), BF16 is {@code ggml_fp32_to_bf16_row_ref} (round to nearest even, a NaN
 * keeps its top bits with the quiet bit forced). Values are independent of rows and weights.
 */
final class FloatEncoders {
    private FloatEncoders() {
    }

    static void f32(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int n = rows * perRow;
        for (int i = 0; i < n; i++, o += 4) GgmlMath.putInt(dst, o, Float.floatToRawIntBits(src[s + i]));
    }

    static void f16(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int n = rows * perRow;
        for (int i = 0; i < n; i++, o += 2) {
            short h = GgmlMath.fp16(src[s + i]);
            dst[o] = (byte) h;
            dst[o + 1] = (byte) (h >> 8);
        }
    }

    static void bf16(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int n = rows * perRow;
        for (int i = 0; i < n; i++, o += 2) {
            short h = Floats.f32ToBf16(src[s + i]);
            dst[o] = (byte) h;
            dst[o + 1] = (byte) (h >> 8);
        }
    }
}
