package io.anamnesis.quant.gguf;

import java.util.Locale;

/**
 * Encodes F32 rows to one of ggml's i-quant types (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS), byte-identical with ggml's {@code ggml_quantize_chunk}.
 * A minimal entry point until the quantizer SPI exists; see {@link IqEncoders}.
 */
public final class GgufIqEncoding {
    private GgufIqEncoding() {
    }

    /**
     * {@code ggml_quantize_chunk(type, rows, dst, 0, nRows, perRow, importance)}.
     *
     * @param ggmlTypeName     ggml's name of the type, any case ({@code iq4_xs})
     * @param rows             at least {@code nRows * perRow} values, row after row
     * @param perRow           a multiple of the type's block size (32 for IQ4_NL, 256 otherwise)
     * @param importanceOrNull null, or {@code perRow} weights: a row of llama.cpp's importance
     *                         matrix, required for IQ2_XXS, IQ2_XS and IQ1_S
     * @return {@code nRows * perRow / blockElements * blockBytes} bytes of blocks
     * @throws IllegalArgumentException for a type that is not an i-quant, sizes that do not
     *                                  fit, a missing required importance matrix, or a row
     *                                  ggml aborts on
     */
    public static byte[] encode(String ggmlTypeName, float[] rows, int nRows, int perRow, float[] importanceOrNull) {
        GgufBlockType type = GgufBlockType.byName(ggmlTypeName.toUpperCase(Locale.ROOT))
                .filter(t -> IqEncoders.of(t).isPresent())
                .orElseThrow(() -> new IllegalArgumentException("not an i-quant type: " + ggmlTypeName));
        if (nRows < 0 || perRow <= 0 || perRow % type.blockElements() != 0) {
            throw new IllegalArgumentException(type + ": " + nRows + " rows of " + perRow
                    + " values (a row must be a positive multiple of " + type.blockElements() + ")");
        }
        if ((long) nRows * perRow > rows.length) {
            throw new IllegalArgumentException(type + ": " + nRows + " rows of " + perRow + " values, but "
                    + rows.length + " values given");
        }
        long bytes = (long) nRows * (perRow / type.blockElements()) * type.blockBytes();
        if (bytes > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(type + ": " + bytes + " bytes do not fit one array");
        }
        if (importanceOrNull != null && importanceOrNull.length != perRow) {
            throw new IllegalArgumentException(type + ": " + importanceOrNull.length
                    + " importance weights for rows of " + perRow);
        }
        byte[] out = new byte[(int) bytes];
        IqEncoders.forType(type).encode(rows, 0, out, 0, nRows, perRow, importanceOrNull);
        return out;
    }
}
