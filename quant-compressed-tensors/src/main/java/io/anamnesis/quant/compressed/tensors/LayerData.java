package io.anamnesis.quant.compressed.tensors;

import io.anamnesis.api.numeric.ScaleGrid;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * Everything the rows of one layer are decoded from: the stored codes (mapped, never
 * copied) and the small companions widened once per tensor. A pure value: kernels read it,
 * never change it.
 *
 * @param kind        how the payload holds one element's code
 * @param bits        bits per code (1..8 for {@link CodeKind#OFFSET_PACKED}; 8 or 4 otherwise)
 * @param payload     the codes, row after row, {@code rowBytes} apart
 * @param rowBytes    bytes of one stored row (int32 words for packed ints: padding at the end)
 * @param rows        output rows
 * @param cols        output columns
 * @param grid        where the scale (and zero point) of element (r, c) is, without g_idx
 * @param scales      F32 scale per grid cell, row-major; the global scale already divided in
 * @param zeros       zero point per grid cell, or null (symmetric)
 * @param columnGroup the group of each column (act-order {@code g_idx}), or null: {@code c / groupSize}
 * @param scaleCodes  the 8-bit code of each scale (FP8 E4M3 or E8M0), or null when scales are wider
 * @param scaleOfCode the F32 scale each of the 256 codes stands for (global scale divided in), with {@code scaleCodes}
 */
public record LayerData(CodeKind kind, int bits, MemorySegment payload, long rowBytes, int rows, int cols,
                        ScaleGrid grid, float[] scales, float[] zeros, int[] columnGroup,
                        byte[] scaleCodes, float[] scaleOfCode) {

    /** What one stored code is. */
    public enum CodeKind {
        /** Unsigned {@code bits}-bit fields packed LSB first; the value is the field minus 2^(bits-1). */
        OFFSET_PACKED,
        /** One two's complement byte per element. */
        INT8,
        /** One FP8 E4M3FN byte per element. */
        E4M3,
        /** One FP8 E5M2 byte per element. */
        E5M2,
        /** FP4 E2M1 codes, two per byte, low nibble first. */
        FP4
    }

    public LayerData {
        Objects.requireNonNull(kind);
        Objects.requireNonNull(payload);
        Objects.requireNonNull(grid);
        Objects.requireNonNull(scales);
        if (scaleCodes != null && (scaleOfCode == null || scaleOfCode.length != 256 || scaleCodes.length != scales.length)) {
            throw new IllegalArgumentException("scale codes without their 256 values");
        }
    }

    /** True when column groups run in order ({@code c / groupSize}, no g_idx). */
    boolean columnOrder() {
        return columnGroup == null;
    }
}
