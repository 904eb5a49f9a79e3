package io.anamnesis.quant.compressed.tensors;

import java.util.Arrays;
import java.util.Optional;

/**
 * The {@code format} values of a compressed-tensors {@code quantization_config} (the
 * library's {@code CompressionFormat}), and whether this module recovers them.
 */
enum CompressionFormat {
    /** Weights stored dense: nothing to recover. */
    DENSE("dense", true),
    /** int weights of 1..8 bits, packed LSB first into int32 words along each row, {@code weight_shape} beside. */
    PACK_QUANTIZED("pack-quantized", true),
    /** Weights stored one per element in the closest torch dtype: int8 or float8. */
    NAIVE_QUANTIZED("naive-quantized", true),
    /** {@link #NAIVE_QUANTIZED} under the name W8A8 int checkpoints use. */
    INT_QUANTIZED("int-quantized", true),
    /** {@link #NAIVE_QUANTIZED} under the name FP8 checkpoints use. */
    FLOAT_QUANTIZED("float-quantized", true),
    /** FP4 E2M1 codes, two per byte, FP8 E4M3 group scales divided by a per-tensor global scale. */
    NVFP4_PACK_QUANTIZED("nvfp4-pack-quantized", true),
    /** FP4 E2M1 codes, two per byte, E8M0 (power of two) scales per 32. */
    MXFP4_PACK_QUANTIZED("mxfp4-pack-quantized", true),
    /** FP8 E4M3 weights with E8M0 scales per 32. */
    MXFP8_QUANTIZED("mxfp8-quantized", true),
    /** Each config group names its own format. */
    MIXED_PRECISION("mixed-precision", true),
    SPARSE_BITMASK("sparse-bitmask", false),
    SPARSE_24_BITMASK("sparse-24-bitmask", false),
    MARLIN_24("marlin-24", false);

    private final String spelling;
    private final boolean recovered;

    CompressionFormat(String spelling, boolean recovered) {
        this.spelling = spelling;
        this.recovered = recovered;
    }

    static Optional<CompressionFormat> of(String spelling) {
        return Arrays.stream(values()).filter(f -> f.spelling.equals(spelling)).findFirst();
    }

    String spelling() {
        return spelling;
    }

    /** False for the layouts this module knows by name but does not decode (sparse, Marlin). */
    boolean recovered() {
        return recovered;
    }

    /** The formats a checkpoint's tensors can be recovered from, for messages. */
    static String supported() {
        return String.join(", ", Arrays.stream(values()).filter(f -> f.recovered && f != MIXED_PRECISION)
                .map(CompressionFormat::spelling).toList());
    }
}
