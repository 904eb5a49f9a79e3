package io.anamnesis.quant.gguf;

import io.anamnesis.api.UnsupportedFeatureException;

import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Quantizes F32 rows to a ggml type, byte-identical with ggml's {@code ggml_quantize_chunk}
 * (what llama-quantize calls): the library entry point to the encoders of this module.
 *
 * <pre>{@code
 * byte[] q4k = GgufEncoding.encode("q4_K", weights, rows, cols, null);
 * }</pre>
 */
public final class GgufEncoding {
    private GgufEncoding() {
    }

    /**
     * Encodes {@code nRows} rows of {@code perRow} values into the blocks of a ggml type, in
     * row order, as a GGUF tensor stores them.
     *
     * @param ggmlTypeName       the type as ggml spells it ({@code q4_K}, {@code iq2_xs},
     *                           {@code bf16}), case-insensitive
     * @param rows               {@code nRows * perRow} values, row-major
     * @param perRow             a multiple of the type's block size
     * @param importanceOrNull   null, or {@code perRow} non-negative weights (a row of
     *                           llama.cpp's importance matrix); types that do not use one ignore it
     * @return {@code nRows * perRow / blockElements * blockBytes} bytes
     * @throws UnsupportedFeatureException when the type is unknown or has no encoder here
     * @throws IllegalArgumentException    when the lengths disagree, {@code perRow} is not whole
     *                                     blocks, or the output would exceed 2 GiB; when IQ2_XXS,
     *                                     IQ2_XS or IQ1_S get no importance, or a row holds what
     *                                     ggml's i-quant search aborts on (see {@link GgufEncoders})
     */
    public static byte[] encode(String ggmlTypeName, float[] rows, int nRows, int perRow, float[] importanceOrNull) {
        GgufBlockType type = GgufBlockType.byName(ggmlTypeName.toUpperCase(Locale.ROOT)).orElseThrow(() ->
                new UnsupportedFeatureException("unknown ggml type '" + ggmlTypeName + "'; encodable: " + encodable()));
        Optional<RowEncoder> encoder = GgufEncoders.forType(type);
        if (encoder.isEmpty()) {
            throw new UnsupportedFeatureException("no encoder for ggml type " + type.name() + " yet; encodable: " + encodable());
        }
        if (nRows < 0 || perRow < 0) throw new IllegalArgumentException("negative shape [" + nRows + ", " + perRow + "]");
        if (perRow % type.blockElements() != 0) {
            throw new IllegalArgumentException("row length " + perRow + " is not a multiple of the "
                    + type.name() + " block of " + type.blockElements());
        }
        if ((long) nRows * perRow != rows.length) {
            throw new IllegalArgumentException(rows.length + " values given for " + nRows + " rows of " + perRow);
        }
        if (importanceOrNull != null && importanceOrNull.length != perRow) {
            throw new IllegalArgumentException("importance has " + importanceOrNull.length + " values, rows have " + perRow);
        }
        long bytes = (long) rows.length / type.blockElements() * type.blockBytes();
        if (bytes > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(bytes + " bytes of " + type.name() + " do not fit one array; encode fewer rows at a time");
        }
        byte[] out = new byte[(int) bytes];
        if (nRows > 0 && perRow > 0) encoder.get().encode(rows, 0, out, 0, nRows, perRow, importanceOrNull);
        return out;
    }

    /** ggml's spelling of every type with an encoder, for messages. */
    private static String encodable() {
        return Arrays.stream(GgufBlockType.values()).filter(t -> GgufEncoders.forType(t).isPresent())
                .map(t -> t.name().toLowerCase(Locale.ROOT).replace("_k", "_K"))
                .collect(Collectors.joining(" "));
    }
}
