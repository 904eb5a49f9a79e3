package io.anamnesis.quant.awq;

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
 * The Vector API form of {@link AwqKernel#dequantizeRowsScalar} to BF16 or F32,
 * bit-identical to it. Loaded only when {@code jdk.incubator.vector} is in the boot layer.
 *
 * <p>Per tile of {@link #WORDS} packed columns (8 output rows each) and {@link #CHUNK}
 * inputs, the words are transposed into a small int buffer (one run of input rows per
 * packed column). Output row {@code 8j + m} is then, for L consecutive inputs, one load of
 * that run, one shift by {@code 4 * field(m)} and a mask; scale and zero broadcast when the
 * L inputs share a group, else are gathered. A tile with a non-finite scale goes to the
 * scalar kernel, which owns the NaN rule of the BF16 narrowing.
 */
final class AwqVectorKernel {
    static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
    static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    static final VectorSpecies<Short> S = VectorSpecies.of(short.class, VectorShape.forBitSize(I.vectorBitSize() / 2));
    static final int L = I.length();
    /** Packed columns per tile: 8 words = 64 output rows. */
    static final int WORDS = 8;
    static final int TILE = WORDS * 8;
    static final int CHUNK = 512;
    /** Field of column 8j + m: the inverse of {@link AwqKernel#ORDER}. */
    static final int[] FIELD = {0, 4, 1, 5, 2, 6, 3, 7};

    private AwqVectorKernel() {
    }

    static boolean supports(DType target) {
        return L >= 4 && (target.equals(DType.BF16) || target.equals(DType.F32));
    }

    static void dequantizeRows(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales,
                               AwqKernel.Layout l, int firstRow, int rowCount, DType target, MemorySegment dest) {
        int in = l.in();
        int out = l.out();
        int gs = l.groupSize();
        boolean bf16 = target.equals(DType.BF16);
        int elementBytes = bf16 ? 2 : 4;
        // padded off a power of two so that the runs do not share cache sets
        int run = CHUNK + 16;
        int[] words = new int[WORDS * run];
        float[] scale = new float[l.groups() * TILE];
        int[] zero = new int[l.groups() * TILE];
        int[] groupRow = new int[in];
        for (int i = 0; i < in; i++) groupRow[i] = i / gs * TILE;
        long rowBytes = (long) out / 8 * 4;

        int end = firstRow + rowCount;
        for (int o0 = firstRow & ~7; o0 < end; o0 += TILE) {
            int tileEnd = Math.min(o0 + TILE, out);
            int nw = (tileEnd - o0) / 8;
            AwqKernel.loadGroupParameters(qzeros, scales, l, o0, tileEnd - o0, TILE, scale, zero);
            int from = Math.max(o0, firstRow);
            int to = Math.min(tileEnd, end);
            if (!allFinite(scale, l.groups(), tileEnd - o0)) {
                MemorySegment part = dest.asSlice((long) (from - firstRow) * in * elementBytes, (long) (to - from) * in * elementBytes);
                AwqKernel.dequantizeRowsScalar(qweight, qzeros, scales, l, from, to - from, target, part);
                continue;
            }
            for (int i0 = 0; i0 < in; i0 += CHUNK) {
                int cols = Math.min(CHUNK, in - i0);
                long base = o0 / 8 * 4L;
                for (int ii = 0; ii < cols; ii++) {
                    long rowBase = (i0 + ii) * rowBytes + base;
                    for (int j = 0; j < nw; j++) words[j * run + ii] = qweight.get(LittleEndian.I32, rowBase + j * 4L);
                }
                int full = cols - cols % L;
                for (int o = from; o < to; o++) {
                    int t = o - o0;
                    int wordBase = (t >>> 3) * run;
                    int shift = 4 * FIELD[t & 7];
                    long at = ((long) (o - firstRow) * in + i0) * elementBytes;
                    for (int ii = 0; ii < full; ii += L) {
                        int i = i0 + ii;
                        IntVector q = IntVector.fromArray(I, words, wordBase + ii).lanewise(VectorOperators.LSHR, shift).and(15);
                        int g = groupRow[i];
                        FloatVector f;
                        if (g == groupRow[i + L - 1]) {
                            f = ((FloatVector) q.sub(zero[g + t]).convert(VectorOperators.I2F, 0)).mul(scale[g + t]);
                        } else {
                            IntVector z = IntVector.fromArray(I, zero, t, groupRow, i);
                            FloatVector s = FloatVector.fromArray(F, scale, t, groupRow, i);
                            f = ((FloatVector) q.sub(z).convert(VectorOperators.I2F, 0)).mul(s);
                        }
                        long off = at + (long) ii * elementBytes;
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
                    for (int ii = full; ii < cols; ii++) {
                        int q = (words[wordBase + ii] >>> shift) & 15;
                        int g = groupRow[i0 + ii] + t;
                        float v = (float) (q - zero[g]) * scale[g];
                        long off = at + (long) ii * elementBytes;
                        if (bf16) {
                            dest.set(LittleEndian.I16, off, Floats.f32ToBf16(v));
                        } else {
                            dest.set(LittleEndian.F32, off, v);
                        }
                    }
                }
            }
        }
    }

    private static boolean allFinite(float[] scale, int groups, int rows) {
        for (int g = 0; g < groups; g++) {
            for (int t = 0; t < rows; t++) if (!Float.isFinite(scale[g * TILE + t])) return false;
        }
        return true;
    }
}
