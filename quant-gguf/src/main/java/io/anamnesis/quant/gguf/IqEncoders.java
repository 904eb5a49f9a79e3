package io.anamnesis.quant.gguf;

import java.util.Optional;

/**
 * The i-quant encoders: ggml's {@code ggml_quantize_chunk} for IQ1_S, IQ1_M, IQ2_XXS,
 * IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL and IQ4_XS, byte-identical with the reference
 * library (ggml's plain C build, the one the corpus and {@code ggml_ref.py} use), with and
 * without an importance matrix.
 *
 * <ul>
 * <li>{@link Iq4Encoder}: IQ4_NL, IQ4_XS (non-linear 4-bit codebook, trial scales).</li>
 * <li>{@link Iq3Encoder}: IQ3_XXS, IQ3_S (4-value grid points, D4-lattice style search).</li>
 * <li>{@link Iq2Encoder}: IQ2_XXS, IQ2_XS, IQ2_S (8-value grid points).</li>
 * <li>{@link Iq1Encoder}: IQ1_S, IQ1_M (ternary 8-value grid points, exact split search).</li>
 * <li>{@link IqGridSearch}: the grid maps and neighbour lists ggml builds at init.</li>
 * </ul>
 *
 * <p>Without an importance matrix, IQ2_XXS, IQ2_XS and IQ1_S are refused with an
 * {@link IllegalArgumentException}, as ggml asserts ({@code ggml_quantize_requires_imatrix}).
 * A row on which ggml would abort (a non-finite value or weight reaching a grid search)
 * is refused the same way; where ggml does not abort, NaN and infinities give its bytes.
 */
final class IqEncoders {
    private IqEncoders() {
    }

    /** The encoder of an i-quant type, empty for every other type. */
    static Optional<RowEncoder> of(GgufBlockType type) {
        return Optional.ofNullable(switch (type) {
            case IQ4_NL -> Iq4Encoder.NL;
            case IQ4_XS -> Iq4Encoder.XS;
            case IQ3_XXS -> Iq3Encoder.XXS;
            case IQ3_S -> Iq3Encoder.S;
            case IQ2_XXS -> Iq2Encoder.XXS;
            case IQ2_XS -> Iq2Encoder.XS;
            case IQ2_S -> Iq2Encoder.S;
            case IQ1_S -> Iq1Encoder.S;
            case IQ1_M -> Iq1Encoder.M;
            default -> null;
        });
    }

    /** The encoder of an i-quant type; {@link IllegalArgumentException} for any other type. */
    static RowEncoder forType(GgufBlockType type) {
        return of(type).orElseThrow(() -> new IllegalArgumentException(type + " is not an i-quant type"));
    }

    /** ggml's {@code ggml_quantize_requires_imatrix}, for the i-quants. */
    static boolean requiresImportance(GgufBlockType type) {
        return type == GgufBlockType.IQ2_XXS || type == GgufBlockType.IQ2_XS || type == GgufBlockType.IQ1_S;
    }
}
