package io.anamnesis.quant.compressed.tensors;

import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.numeric.E8M0;
import io.anamnesis.api.numeric.Float8;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.numeric.ScaleGrid;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.RecoveryKernel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Optional;

/**
 * One compressed-tensors layer: maps its codes, widens its small companions (scales, global
 * scale, zero points, g_idx) once, checks them, and decodes whole rows, the granule.
 *
 * @param payload     {@code weight_packed} or {@code weight}
 * @param kind        how the payload holds a code
 * @param bits        bits per code
 * @param rowBytes    bytes of one stored row
 * @param rows        output rows
 * @param cols        output columns
 * @param grid        the scale layout
 * @param scale       {@code weight_scale}
 * @param e8m0        whether 8-bit unsigned scales are E8M0 exponents (MX formats)
 * @param global      {@code weight_global_scale} (NVFP4), which divides every scale
 * @param zero        {@code weight_zero_point}
 * @param zeroPacked  whether the zero points are packed along rows (pack-quantized group/channel)
 * @param gIdx        {@code weight_g_idx}
 */
record LayerKernel(TensorEntry payload, LayerData.CodeKind kind, int bits, long rowBytes, int rows, int cols,
                   ScaleGrid grid, TensorEntry scale, boolean e8m0, Optional<TensorEntry> global,
                   Optional<TensorEntry> zero, boolean zeroPacked, Optional<TensorEntry> gIdx) implements RecoveryKernel {

    @Override
    public long granule() {
        return Math.max(1, cols);
    }

    @Override
    public ChunkFiller open(TensorArchive archive, Arena arena, DType target) {
        if (!target.equals(DType.BF16) && !target.equals(DType.F16) && !target.equals(DType.F32)) {
            throw UnsupportedFeatureException.inTensor(payload.name(), "compressed-tensors recovers to BF16, F16 or F32, not " + target);
        }
        LayerData d = load(archive, arena);
        CtKernels.Prepared prepared = CtKernels.prepare(d, target);
        if (cols == 0) return (first, count, dest) -> { };
        // the implementation is chosen per chunk: the vector lookups take over once compiled
        return (first, count, dest) -> CtKernels.rows(CtKernels.best(), prepared, first / cols, count / cols, dest);
    }

    /** The layer's data: the payload mapped, the companions read and checked. */
    LayerData load(TensorArchive archive, Arena arena) {
        MemorySegment codes = mapped(archive, payload, arena);
        long need = Math.multiplyExact(rowBytes, (long) rows);
        if (codes.byteSize() < need) {
            throw MalformedFileException.inTensor(payload.name(), "holds " + codes.byteSize() + " bytes, " + rows
                    + " rows of " + rowBytes + " need " + need);
        }
        int count = scaleCount();
        float divisor = global.map(g -> globalScale(archive, g, arena)).orElse(1f);
        MemorySegment scaleBytes = mapped(archive, scale, arena);
        float[] scales = new float[count];
        byte[] scaleCodes = null;
        float[] scaleOfCode = null;
        Optional<Float8> f8 = Float8.of(scale.dtype());
        boolean exponents = e8m0 && (scale.dtype().equals(DType.U8) || scale.dtype().equals(DType.F8_E8M0));
        if (f8.isPresent() || exponents) {
            // 8-bit scale codes: 256 possible scales, each divided by the global scale once
            scaleOfCode = new float[256];
            for (int c = 0; c < 256; c++) {
                float s = exponents ? E8M0.decode(c) : f8.get().decode(c);
                scaleOfCode[c] = global.isPresent() ? s / divisor : s;
            }
            scaleCodes = new byte[count];
            for (int i = 0; i < count; i++) {
                scaleCodes[i] = scaleBytes.get(ValueLayout.JAVA_BYTE, i);
                scales[i] = scaleOfCode[scaleCodes[i] & 0xFF];
            }
        } else {
            // the dtype resolved once: a record's equals per scale showed in profiles of big layers
            int width = scale.dtype().equals(DType.F32) ? 4 : scale.dtype().equals(DType.BF16) ? 1 : 2;
            for (int i = 0; i < count; i++) {
                float s = switch (width) {
                    case 4 -> scaleBytes.get(LittleEndian.F32, 4L * i);
                    case 1 -> Floats.bf16ToF32(scaleBytes.get(LittleEndian.I16, 2L * i));
                    default -> Floats.f16ToF32(scaleBytes.get(LittleEndian.I16, 2L * i));
                };
                scales[i] = global.isPresent() ? s / divisor : s;
            }
        }
        float[] zeros = zero.map(z -> zeros(archive, z, arena, count)).orElse(null);
        int[] columnGroup = gIdx.flatMap(g -> groups(archive, g, arena)).orElse(null);
        return new LayerData(kind, bits, codes, rowBytes, rows, cols, grid, scales, zeros, columnGroup,
                scaleCodes, scaleOfCode);
    }

    private int scaleCount() {
        long n = grid.scaleCount();
        if (n > Integer.MAX_VALUE - 16) {
            throw LimitExceededException.inTensor(scale.name(), n + " scales are more than one array holds");
        }
        return (int) n;
    }

    private static MemorySegment mapped(TensorArchive archive, TensorEntry e, Arena arena) {
        MemorySegment s = archive.data(e, arena);
        if (s.byteSize() != e.byteSize()) {
            throw MalformedFileException.inTensor(e.name(), "holds " + s.byteSize() + " bytes, its dtype and shape need "
                    + e.byteSize());
        }
        return s;
    }

    /** Element {@code i} of a float tensor (F32, BF16, F16: exact widenings). */
    private static float wide(MemorySegment bytes, TensorEntry e, long i) {
        DType dt = e.dtype();
        if (dt.equals(DType.F32)) return bytes.get(LittleEndian.F32, 4 * i);
        if (dt.equals(DType.BF16)) return Floats.bf16ToF32(bytes.get(LittleEndian.I16, 2 * i));
        return Floats.f16ToF32(bytes.get(LittleEndian.I16, 2 * i));
    }

    private static float globalScale(TensorArchive archive, TensorEntry g, Arena arena) {
        return wide(mapped(archive, g, arena), g, 0);
    }

    /** Zero points as F32, one per scale: unpacked from int32 columns, or widened as stored. */
    private float[] zeros(TensorArchive archive, TensorEntry z, Arena arena, int count) {
        MemorySegment bytes = mapped(archive, z, arena);
        float[] out = new float[count];
        if (zeroPacked) {
            // [words(rows), scaleCols] int32: column g is its own LSB-first bit stream, one word per row of words
            int scaleCols = (int) grid.scaleCols();
            int offset = 1 << (bits - 1);
            int mask = (1 << bits) - 1;
            for (int r = 0; r < grid.scaleRows(); r++) {
                long bit = (long) r * bits;
                int word = (int) (bit >>> 5);
                int shift = (int) (bit & 31);
                for (int g = 0; g < scaleCols; g++) {
                    int v = bytes.get(LittleEndian.I32, 4L * ((long) word * scaleCols + g)) >>> shift;
                    if (shift + bits > 32) {
                        v |= bytes.get(LittleEndian.I32, 4L * ((long) (word + 1) * scaleCols + g)) << (32 - shift);
                    }
                    out[r * scaleCols + g] = (v & mask) - offset;
                }
            }
            return out;
        }
        DType dt = z.dtype();
        for (int i = 0; i < count; i++) {
            long at = z.elementCount() == 1 ? 0 : i;
            out[i] = switch (dt.name()) {
                case "I8" -> bytes.get(ValueLayout.JAVA_BYTE, at);
                case "U8" -> bytes.get(ValueLayout.JAVA_BYTE, at) & 0xFF;
                case "I16" -> bytes.get(LittleEndian.I16, 2 * at);
                case "I32" -> bytes.get(LittleEndian.I32, 4 * at);
                case "I64" -> bytes.get(LittleEndian.I64, 8 * at);
                case "F8_E4M3" -> Float8.E4M3FN.decode(bytes.get(ValueLayout.JAVA_BYTE, at));
                default -> wide(bytes, z, at);
            };
        }
        return out;
    }

    /**
     * The group of every column from {@code g_idx}, each checked against the scale columns;
     * empty when it holds -1, which compressed-tensors reads as "not initialized": column order.
     */
    private Optional<int[]> groups(TensorArchive archive, TensorEntry g, Arena arena) {
        MemorySegment bytes = mapped(archive, g, arena);
        boolean wide = g.dtype().equals(DType.I64);
        int[] out = new int[cols];
        long groups = grid.scaleCols();
        for (int c = 0; c < cols; c++) {
            long v = wide ? bytes.get(LittleEndian.I64, 8L * c) : bytes.get(LittleEndian.I32, 4L * c);
            if (v == -1) return Optional.empty();
            if (v < 0 || v >= groups) {
                throw MalformedFileException.inTensor(g.name(), "column " + c + " is in group " + v + ", but "
                        + scale.name() + " has " + groups + " groups");
            }
            out[c] = (int) v;
        }
        return Optional.of(out);
    }
}
