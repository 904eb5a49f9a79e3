package io.anamnesis.quant.fp8;

/**
 * The FP8 code of every float32 in one lookup: 128 KiB per format, indexed by the float's top
 * 16 bits (sign, exponent, the first 7 mantissa bits) and one more bit that says whether its
 * low 16 bits are zero.
 *
 * <p>Why that is exact: every FP8 format keeps at most 3 mantissa bits, so the bit that decides
 * a rounding (the half) is mantissa bit 19 or higher, inside the top 16, and so is every step
 * of the saturation, NaN and subnormal rules. The low 16 bits can only tell a value that is
 * exactly a half (a tie, rounded to even) from one just above it (rounded up): whether they
 * are zero is all that matters of them. Each entry is {@link Fp8Encoder#code} of one float of
 * its class, so the table agrees with the rule it replaces by construction
 * ({@code Fp8CodeTableTest} checks both ends of every class).
 *
 * <p>Why a table: {@code code} takes a dozen operations and two data-dependent branches per
 * value; the lookup takes a shift, a mask and a load: the encoder's loop 2.8 -> 1.75 ns a
 * value once compiled (docs/benchmarks.md).
 */
final class Fp8CodeTable {
    private Fp8CodeTable() {
    }

    /** The table of {@code format}, built on first use (about a millisecond once compiled). */
    static byte[] of(Fp8Format format) {
        return switch (format) {
            case E4M3 -> E4m3.TABLE;
            case E5M2 -> E5m2.TABLE;
            case E4M3FNUZ -> E4m3Fnuz.TABLE;
            case E5M2FNUZ -> E5m2Fnuz.TABLE;
        };
    }

    /** The entry of the float whose raw bits are {@code bits}. */
    static int index(int bits) {
        // (low + 0xFFFF) >>> 16 is 1 exactly when the low 16 bits are not all zero
        return ((bits >>> 15) & ~1) | (((bits & 0xFFFF) + 0xFFFF) >>> 16);
    }

    static byte[] build(Fp8Format format) {
        Fp8Grid g = format.grid();
        byte[] table = new byte[1 << 17];
        for (int top = 0; top < 1 << 16; top++) {
            table[top << 1] = (byte) Fp8Encoder.code(Float.intBitsToFloat(top << 16), g);
            table[(top << 1) | 1] = (byte) Fp8Encoder.code(Float.intBitsToFloat((top << 16) | 1), g);
        }
        return table;
    }

    // one holder per format: the JVM's class initialization builds each once, on first use, safely published
    private static final class E4m3 {
        static final byte[] TABLE = build(Fp8Format.E4M3);
    }

    private static final class E5m2 {
        static final byte[] TABLE = build(Fp8Format.E5M2);
    }

    private static final class E4m3Fnuz {
        static final byte[] TABLE = build(Fp8Format.E4M3FNUZ);
    }

    private static final class E5m2Fnuz {
        static final byte[] TABLE = build(Fp8Format.E5M2FNUZ);
    }
}
