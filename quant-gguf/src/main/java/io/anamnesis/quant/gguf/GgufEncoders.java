package io.anamnesis.quant.gguf;

import java.util.Optional;

/**
 * The encoder of each ggml type this module can write: the one place the forget path looks
 * encoders up. Types without an entry are refused by the quantizer as not yet encodable.
 */
final class GgufEncoders {
    private GgufEncoders() {
    }

    /**
     * Whether the Vector API encoders run: when the decoders' do (the incubating module is
     * present, 256-bit vectors, {@code anamnesis.gguf.scalar} not set). They give the same
     * bytes as the scalar ones; the tests compare both.
     */
    static final boolean VECTOR = GgufKernel.VECTOR;

    /**
     * The row encoder of a block type, byte-identical with ggml's {@code ggml_quantize_chunk};
     * for Q8_1 and Q8_K, which that function does not take (ggml's internal dot-product
     * types), with their {@code quantize_row_*_ref}.
     */
    static Optional<RowEncoder> forType(GgufBlockType type) {
        return forType(type, VECTOR);
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
            default -> null;
        };
        return Optional.ofNullable(encoder);
    }
}
