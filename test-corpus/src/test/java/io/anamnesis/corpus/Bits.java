package io.anamnesis.corpus;

import io.anamnesis.api.numeric.Floats;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** Bit-level comparison of tensors as the corpus README prescribes. */
final class Bits {
    private Bits() {
    }

    /** F32 bit patterns of a little-endian F32, F16 or BF16 byte array (widening is exact). */
    static int[] asF32Bits(String dtype, byte[] bytes) {
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        return switch (dtype) {
            case "F32" -> {
                int[] out = new int[bytes.length / 4];
                b.asIntBuffer().get(out);
                yield out;
            }
            case "F16" -> {
                int[] out = new int[bytes.length / 2];
                for (int i = 0; i < out.length; i++) out[i] = Float.floatToRawIntBits(Floats.f16ToF32(b.getShort(2 * i)));
                yield out;
            }
            case "BF16" -> {
                int[] out = new int[bytes.length / 2];
                for (int i = 0; i < out.length; i++) out[i] = (b.getShort(2 * i) & 0xFFFF) << 16;
                yield out;
            }
            default -> throw new IllegalArgumentException("not a float dtype: " + dtype);
        };
    }

    /** The 16-bit patterns of a little-endian BF16 or F16 byte array. */
    static short[] asShorts(byte[] bytes) {
        short[] out = new short[bytes.length / 2];
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asShortBuffer().get(out);
        return out;
    }

    /** The expected F32 narrowed to {@code target} by round-to-nearest-even. */
    static short[] narrow(int[] f32, String target) {
        short[] out = new short[f32.length];
        for (int i = 0; i < f32.length; i++) {
            out[i] = target.equals("BF16") ? Floats.f32ToBf16(f32[i]) : Floats.f32ToF16(Float.intBitsToFloat(f32[i]));
        }
        return out;
    }

    /** Index of the first element whose F32 bits differ (NaN payloads and signed zeros count), or -1. */
    static int firstMismatch(int[] expected, int[] actual) {
        for (int i = 0; i < expected.length; i++) {
            if (expected[i] != actual[i]) return i;
        }
        return -1;
    }

    /**
     * Index of the first 16-bit pattern that differs, or -1. A NaN matches any NaN: the
     * README's narrowing formula carries some NaN payloads into infinity, ours keeps them NaN.
     */
    static int firstMismatch(short[] expected, short[] actual, String dtype) {
        for (int i = 0; i < expected.length; i++) {
            if (expected[i] != actual[i] && !(isNaN16(expected[i], dtype) && isNaN16(actual[i], dtype))) return i;
        }
        return -1;
    }

    private static boolean isNaN16(short bits, String dtype) {
        return dtype.equals("BF16") ? Float.isNaN(Floats.bf16ToF32(bits)) : Float.isNaN(Floats.f16ToF32(bits));
    }
}
