package io.anamnesis.quant.gguf;

import io.anamnesis.api.numeric.KernelRace;

import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;

/**
 * The encoder of each ggml type this module can write: the one place the forget path and
 * {@link GgufEncoding} look encoders up. Types without an entry are refused by the quantizer
 * as not encodable.
 *
 * <ul>
 * <li>{@link FloatEncoders}: F32, F16, BF16.</li>
 * <li>{@link LegacyEncoders}: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (and Q8_1).</li>
 * <li>{@link KQuantEncoders}: Q2_K..Q6_K (and Q8_K).</li>
 * <li>{@link Iq4Encoder}: IQ4_NL, IQ4_XS (non-linear 4-bit codebook, trial scales); their
 * search on the Vector API in {@link Iq4VectorEncoders}.</li>
 * <li>{@link Iq3Encoder}: IQ3_XXS, IQ3_S (4-value grid points, D4-lattice style search).</li>
 * <li>{@link Iq2Encoder}: IQ2_XXS, IQ2_XS, IQ2_S (8-value grid points).</li>
 * <li>{@link Iq1Encoder}: IQ1_S, IQ1_M (ternary 8-value grid points, exact split search);
 *     {@link IqGridSearch} holds the grid maps and neighbour lists ggml builds at init.</li>
 * <li>{@link TernaryEncoders}: TQ1_0, TQ2_0; {@link Fp4Encoders}: MXFP4, NVFP4;
 *     {@link BitEncoders}: Q1_0, Q2_0.</li>
 * </ul>
 *
 * <p>Without an importance matrix, IQ2_XXS, IQ2_XS and IQ1_S are refused with an
 * {@link IllegalArgumentException}, as ggml asserts ({@link #requiresImportance}); so is a
 * row on which ggml's i-quant search would abort (a non-finite value or weight reaching a
 * grid search). Everywhere else NaN and infinities give ggml's bytes.
 */
final class GgufEncoders {
    private GgufEncoders() {
    }

    /**
     * Whether the Vector API encoders may run: when the decoders' do (the incubating module is
     * present, 256-bit vectors, {@code anamnesis.gguf.scalar} not set). They give the same
     * bytes as the scalar ones; the tests compare both. With {@code anamnesis.kernels=auto},
     * the {@link #LIGHT} types start on the scalar encoders and switch when the race says.
     */
    static final boolean VECTOR = GgufKernel.VECTOR;

    /**
     * The row encoder of a block type, byte-identical with ggml's {@code ggml_quantize_chunk};
     * for Q8_1 and Q8_K, which that function does not take (ggml's internal dot-product
     * types), with their {@code quantize_row_*_ref}.
     */
    static Optional<RowEncoder> forType(GgufBlockType type) {
        if (!VECTOR) return forType(type, false);
        Optional<RowEncoder> vector = forType(type, true);
        if (!LIGHT.contains(type)) return vector;
        RowEncoder scalar = forType(type, false).orElseThrow();
        RowEncoder fast = vector.orElseThrow();
        // an importance row makes even these types a scale search per block: vector from the start
        return Optional.of((src, s, dst, o, rows, perRow, importance) ->
                (importance != null || RACE.getAsBoolean() ? fast : scalar).encode(src, s, dst, o, rows, perRow, importance));
    }

    /**
     * The types whose reference encoder is a few operations per value (one scale from the
     * extreme, then a rounding): their scalar encoders finish a short run before the vector
     * ones are compiled (1 GiB BF16 to q8_0: 4.8-5.0 s CPU and 108 MiB scalar, 6.6-8.7 s and
     * 278 MiB with the vector encoders from the first call), so they race (KernelRace). The
     * K-quants and i-quants search scales, tens of operations per value, and their vector
     * encoders win from the start.
     */
    private static final Set<GgufBlockType> LIGHT = EnumSet.of(GgufBlockType.Q4_0, GgufBlockType.Q4_1,
            GgufBlockType.Q5_0, GgufBlockType.Q5_1, GgufBlockType.Q8_0, GgufBlockType.TQ1_0, GgufBlockType.TQ2_0,
            GgufBlockType.MXFP4, GgufBlockType.NVFP4, GgufBlockType.Q2_0);

    private static final KernelRace RACE = new KernelRace("gguf-encode",
            () -> Probe.run(false), () -> Probe.run(true));

    /** The race's private work: 16 Ki weight-like values to Q8_0 and Q4_0. */
    private static final class Probe {
        static final int COLS = 4096;
        static final float[] X = new float[4 * COLS];
        static final byte[] OUT = new byte[X.length / 32 * 34];

        static {
            java.util.SplittableRandom r = new java.util.SplittableRandom(1);
            for (int i = 0; i < X.length; i++) X[i] = (float) (r.nextGaussian() * 0.02);
        }

        static void run(boolean vector) {
            if (vector) {
                LegacyVectorEncoders.q8_0(X, 0, OUT, 0, 4, COLS, null);
                LegacyVectorEncoders.q4_0(X, 0, OUT, 0, 4, COLS, null);
            } else {
                LegacyEncoders.q8_0(X, 0, OUT, 0, 4, COLS, null);
                LegacyEncoders.q4_0(X, 0, OUT, 0, 4, COLS, null);
            }
        }
    }

    /** The same, with the Vector API encoders ({@code vector}, where a type has one) or the scalar ones only. */
    static Optional<RowEncoder> forType(GgufBlockType type, boolean vector) {
        RowEncoder encoder = switch (type) {
            case F32 -> FloatEncoders::f32;
            case F16 -> FloatEncoders::f16;
            case BF16 -> FloatEncoders::bf16;
            case Q4_0 -> vector ? LegacyVectorEncoders::q4_0 : LegacyEncoders::q4_0;
            case Q4_1 -> vector ? LegacyVectorEncoders::q4_1 : LegacyEncoders::q4_1;
            case Q5_0 -> vector ? LegacyVectorEncoders::q5_0 : LegacyEncoders::q5_0;
            case Q5_1 -> vector ? LegacyVectorEncoders::q5_1 : LegacyEncoders::q5_1;
            case Q8_0 -> vector ? LegacyVectorEncoders::q8_0 : LegacyEncoders::q8_0;
            case Q8_1 -> LegacyEncoders::q8_1;
            case Q2_K -> vector ? KQuantVectorEncoders::q2_k : KQuantEncoders::q2_k;
            case Q3_K -> vector ? KQuantVectorEncoders::q3_k : KQuantEncoders::q3_k;
            case Q4_K -> vector ? KQuantVectorEncoders::q4_k : KQuantEncoders::q4_k;
            case Q5_K -> vector ? KQuantVectorEncoders::q5_k : KQuantEncoders::q5_k;
            case Q6_K -> vector ? KQuantVectorEncoders::q6_k : KQuantEncoders::q6_k;
            case Q8_K -> KQuantEncoders::q8_k;
            case TQ1_0 -> vector ? TritVectorEncoders::tq1_0 : TernaryEncoders::tq1_0;
            case TQ2_0 -> vector ? TritVectorEncoders::tq2_0 : TernaryEncoders::tq2_0;
            case MXFP4 -> vector ? Fp4VectorEncoders::mxfp4 : Fp4Encoders::mxfp4;
            case NVFP4 -> vector ? Fp4VectorEncoders::nvfp4 : Fp4Encoders::nvfp4;
            case Q1_0 -> BitEncoders::q1_0;
            case Q2_0 -> vector ? TritVectorEncoders::q2_0 : BitEncoders::q2_0;
            case IQ4_NL -> vector ? Iq4VectorEncoders.NL : Iq4Encoder.NL;
            case IQ4_XS -> vector ? Iq4VectorEncoders.XS : Iq4Encoder.XS;
            case IQ3_XXS -> Iq3Encoder.XXS;
            case IQ3_S -> Iq3Encoder.S;
            case IQ2_XXS -> Iq2Encoder.XXS;
            case IQ2_XS -> Iq2Encoder.XS;
            case IQ2_S -> Iq2Encoder.S;
            case IQ1_S -> Iq1Encoder.S;
            case IQ1_M -> Iq1Encoder.M;
            default -> null;
        };
        return Optional.ofNullable(encoder);
    }

    /** ggml's {@code ggml_quantize_requires_imatrix}: the types it will not encode without importance weights. */
    static boolean requiresImportance(GgufBlockType type) {
        return type == GgufBlockType.IQ2_XXS || type == GgufBlockType.IQ2_XS || type == GgufBlockType.IQ1_S;
    }
}
