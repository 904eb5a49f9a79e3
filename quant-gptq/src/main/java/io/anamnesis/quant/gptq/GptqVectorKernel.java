package io.anamnesis.quant.gptq;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.LittleEndian;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * The Vector API form of {@link GptqKernel#dequantizeRowsScalar} for 2, 4 and 8 bits to BF16
 * or F32, bit-identical to it (same integer difference, same single float32 multiply, same
 * round-to-nearest-even). Loaded only when {@code jdk.incubator.vector} is in the boot layer.
 *
 * <p>L consecutive inputs of one output column live in {@code W = L*bits/32} consecutive
 * packed rows, one word per row. A tile of L output columns loads those W rows as W
 * vectors straight from qweight (one cache line each on AVX-512), and a lane selection
 * ({@code selectFrom}, one or two-source) spreads column t's W words over the lanes; a
 * variable shift and a mask give the codes. No transposed copy is made, and each output
 * row is written front to back. Groups uniform over a vector broadcast their scale and
 * zero; act-order rows gather them. Column tiles narrower than L, and tiles with a
 * non-finite scale (the NaN rule of the BF16 narrowing), go to the scalar kernel.
 */
final class GptqVectorKernel {
    static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
    static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    static final VectorSpecies<Short> S = VectorSpecies.of(short.class, VectorShape.forBitSize(I.vectorBitSize() / 2));
    static final int L = I.length();

    private GptqVectorKernel() {
    }

    static boolean supports(GptqKernel.Layout l, DType target) {
        int rowsPerVector = L * l.bits() / 32;
        return l.bits() != 3 && L >= 8 && (L * l.bits()) % 32 == 0
                && (rowsPerVector == 1 || rowsPerVector == 2 || rowsPerVector == 4)
                && (target.equals(DType.BF16) || target.equals(DType.F32));
    }

    static void dequantizeRows(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales, int[] groupOf,
                               GptqKernel.Layout l, int firstRow, int rowCount, DType target, MemorySegment dest) {
        int bits = l.bits();
        int perWord = 32 / bits;
        int mask = (1 << bits) - 1;
        int in = l.in();
        long out = l.out();
        boolean bf16 = target.equals(DType.BF16);
        int elementBytes = bf16 ? 2 : 4;
        int rowsPerVector = L * bits / 32;
        float[] scale = new float[l.groups() * L];
        int[] zero = new int[l.groups() * L];

        int[] pick = new int[L];
        int[] shift = new int[L];
        int[] merge = new int[L];
        for (int lane = 0; lane < L; lane++) {
            int word = lane * bits / 32;
            // two-source selection indexes: 0..L-1 from the first vector, L..2L-1 from the second
            pick[lane] = rowsPerVector == 4 ? L * (word & 1) : L * word;
            shift[lane] = lane * bits % 32;
            merge[lane] = lane < L / 2 ? lane : L + lane - L / 2;
        }
        IntVector pickBase = IntVector.fromArray(I, pick, 0);
        IntVector shifts = IntVector.fromArray(I, shift, 0);
        IntVector merger = IntVector.fromArray(I, merge, 0);

        int blocks = in / L;
        int[] blockGroup = new int[blocks];
        int[] groupCol = new int[in];
        for (int i = 0; i < in; i++) groupCol[i] = groupOf[i] * L;
        for (int b = 0; b < blocks; b++) {
            int g = groupOf[b * L];
            for (int k = 1; k < L && g >= 0; k++) if (groupOf[b * L + k] != g) g = -1;
            blockGroup[b] = g;
        }
        int full = blocks * L;
        long rowStride = out * 4;

        int end = firstRow + rowCount;
        int c0 = firstRow;
        for (; c0 + L <= end; c0 += L) {
            GptqKernel.loadGroupParameters(qzeros, scales, l, c0, L, L, scale, zero);
            if (!allFinite(scale, l.groups())) {
                scalar(qweight, qzeros, scales, groupOf, l, firstRow, c0, L, target, dest);
                continue;
            }
            long colBase = c0 * 4L;
            long tileAt = (long) (c0 - firstRow) * in * elementBytes;
            long rowBytes = (long) in * elementBytes;
            for (int i = 0; i < full; i += L) {
                long row = (long) (i / perWord) * rowStride + colBase;
                IntVector a0 = IntVector.fromMemorySegment(I, qweight, row, ByteOrder.LITTLE_ENDIAN);
                IntVector a1 = rowsPerVector >= 2 ? IntVector.fromMemorySegment(I, qweight, row + rowStride, ByteOrder.LITTLE_ENDIAN) : a0;
                IntVector a2 = rowsPerVector == 4 ? IntVector.fromMemorySegment(I, qweight, row + 2 * rowStride, ByteOrder.LITTLE_ENDIAN) : a0;
                IntVector a3 = rowsPerVector == 4 ? IntVector.fromMemorySegment(I, qweight, row + 3 * rowStride, ByteOrder.LITTLE_ENDIAN) : a0;
                int g = blockGroup[i / L];
                long off = tileAt + (long) i * elementBytes;
                for (int t = 0; t < L; t++, off += rowBytes) {
                    IntVector select = pickBase.add(t);
                    IntVector words;
                    if (rowsPerVector == 1) {
                        words = a0.rearrange(select.toShuffle());
                    } else if (rowsPerVector == 2) {
                        words = select.selectFrom(a0, a1);
                    } else {
                        words = merger.selectFrom(select.selectFrom(a0, a1), select.selectFrom(a2, a3));
                    }
                    IntVector q = words.lanewise(VectorOperators.LSHR, shifts).and(mask);
                    FloatVector f;
                    if (g >= 0) {
                        f = ((FloatVector) q.sub(zero[g * L + t]).convert(VectorOperators.I2F, 0)).mul(scale[g * L + t]);
                    } else {
                        IntVector z = IntVector.fromArray(I, zero, t, groupCol, i);
                        FloatVector s = FloatVector.fromArray(F, scale, t, groupCol, i);
                        f = ((FloatVector) q.sub(z).convert(VectorOperators.I2F, 0)).mul(s);
                    }
                    if (bf16) {
                        IntVector b = f.reinterpretAsInts();
                        IntVector rounded = b.add(b.lanewise(VectorOperators.LSHR, 16).and(1)).add(0x7FFF)
                                .lanewise(VectorOperators.LSHR, 16);
                        ((ShortVector) rounded.convertShape(VectorOperators.I2S, S, 0))
                                .intoMemorySegment(dest, off, ByteOrder.LITTLE_ENDIAN);
                    } else {
                        f.intoMemorySegment(dest, off, ByteOrder.LITTLE_ENDIAN);
                    }
                }
            }
            for (int t = 0; t < L; t++) {
                long at = (long) (c0 - firstRow + t) * in * elementBytes;
                for (int i = full; i < in; i++) {
                    int word = qweight.get(LittleEndian.I32, (long) (i / perWord) * rowStride + colBase + t * 4L);
                    int q = (word >>> (bits * (i % perWord))) & mask;
                    int g = groupCol[i] + t;
                    float v = scale[g] * (float) (q - zero[g]);
                    long off = at + (long) i * elementBytes;
                    if (bf16) {
                        dest.set(LittleEndian.I16, off, Floats.f32ToBf16(v));
                    } else {
                        dest.set(LittleEndian.F32, off, v);
                    }
                }
            }
        }
        if (c0 < end) scalar(qweight, qzeros, scales, groupOf, l, firstRow, c0, end - c0, target, dest);
    }

    /** Rows {@code [from, from + rows)} by the scalar kernel, into their place in {@code dest}. */
    private static void scalar(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales, int[] groupOf,
                               GptqKernel.Layout l, int firstRow, int from, int rows, DType target, MemorySegment dest) {
        long rowBytes = target.byteSize(l.in());
        MemorySegment part = dest.asSlice((from - firstRow) * rowBytes, rows * rowBytes);
        GptqKernel.dequantizeRowsScalar(qweight, qzeros, scales, groupOf, l, from, rows, target, part);
    }

    private static boolean allFinite(float[] scale, int groups) {
        for (int k = 0; k < groups * L; k++) if (!Float.isFinite(scale[k])) return false;
        return true;
    }
}
