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
    /** Packed columns per tile: one vector's worth (16 words = 128 output rows on AVX-512). */
    static final int WORDS = Math.max(8, L);
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
                int done = 0;
                if (L == 16 && nw == 16) {
                    for (; done + 16 <= cols; done += 16) {
                        transpose16(qweight, (i0 + done) * rowBytes + base, rowBytes, words, run, done);
                    }
                }
                for (int ii = done; ii < cols; ii++) {
                    long rowBase = (i0 + ii) * rowBytes + base;
                    for (int j = 0; j < nw; j++) words[j * run + ii] = qweight.get(LittleEndian.I32, rowBase + j * 4L);
                }
                int full = cols - cols % L;
                for (int o = from; o < to; o++) {
                    int t = o - o0;
                    int wordBase = (t >>> 3) * run;
                    int shift = 4 * FIELD[t & 7];
                    long at = ((long) (o - firstRow) * in + i0) * elementBytes;
                    int lastGroup = -1;
                    IntVector zeroV = IntVector.zero(I);
                    FloatVector scaleV = FloatVector.zero(F);
                    for (int ii = 0; ii < full; ii += L) {
                        int i = i0 + ii;
                        IntVector q = IntVector.fromArray(I, words, wordBase + ii).lanewise(VectorOperators.LSHR, shift).and(15);
                        int g = groupRow[i];
                        FloatVector f;
                        if (g == groupRow[i + L - 1]) {
                            if (g != lastGroup) {
                                zeroV = IntVector.broadcast(I, zero[g + t]);
                                scaleV = FloatVector.broadcast(F, scale[g + t]);
                                lastGroup = g;
                            }
                            f = ((FloatVector) q.sub(zeroV).convert(VectorOperators.I2F, 0)).mul(scaleV);
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

    /** Lane selections of the 16 x 16 transpose (two-source: indexes 16..31 take the second vector). */
    private static final IntVector LO8 = half(8, false), HI8 = half(8, true), LO4 = half(4, false), HI4 = half(4, true),
            LO2 = half(2, false), HI2 = half(2, true), LO1 = half(1, false), HI1 = half(1, true);

    private static IntVector half(int h, boolean high) {
        int[] idx = new int[L];
        for (int c = 0; c < L; c++) {
            boolean first = (c & h) == 0;
            idx[c] = high ? (first ? c + h : L + c) : (first ? c : L + c - h);
        }
        return IntVector.fromArray(I, idx, 0);
    }

    /**
     * Transposes the 16 x 16 words at rows {@code [i, i+16)}, byte offset {@code base} of
     * qweight into {@code words[j * run + ii ...]}: a 2x2 block transpose at halves 8, 4, 2
     * and 1 lanes, each a two-source lane selection.
     */
    private static void transpose16(MemorySegment qweight, long base, long rowBytes, int[] words, int run, int ii) {
        IntVector r0 = IntVector.fromMemorySegment(I, qweight, base + 0 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector r1 = IntVector.fromMemorySegment(I, qweight, base + 1 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector r2 = IntVector.fromMemorySegment(I, qweight, base + 2 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector r3 = IntVector.fromMemorySegment(I, qweight, base + 3 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector r4 = IntVector.fromMemorySegment(I, qweight, base + 4 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector r5 = IntVector.fromMemorySegment(I, qweight, base + 5 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector r6 = IntVector.fromMemorySegment(I, qweight, base + 6 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector r7 = IntVector.fromMemorySegment(I, qweight, base + 7 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector r8 = IntVector.fromMemorySegment(I, qweight, base + 8 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector r9 = IntVector.fromMemorySegment(I, qweight, base + 9 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector r10 = IntVector.fromMemorySegment(I, qweight, base + 10 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector r11 = IntVector.fromMemorySegment(I, qweight, base + 11 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector r12 = IntVector.fromMemorySegment(I, qweight, base + 12 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector r13 = IntVector.fromMemorySegment(I, qweight, base + 13 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector r14 = IntVector.fromMemorySegment(I, qweight, base + 14 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector r15 = IntVector.fromMemorySegment(I, qweight, base + 15 * rowBytes, ByteOrder.LITTLE_ENDIAN);
        IntVector a;
        IntVector b;
        a = LO8.selectFrom(r0, r8);
        b = HI8.selectFrom(r0, r8);
        r0 = a;
        r8 = b;
        a = LO8.selectFrom(r1, r9);
        b = HI8.selectFrom(r1, r9);
        r1 = a;
        r9 = b;
        a = LO8.selectFrom(r2, r10);
        b = HI8.selectFrom(r2, r10);
        r2 = a;
        r10 = b;
        a = LO8.selectFrom(r3, r11);
        b = HI8.selectFrom(r3, r11);
        r3 = a;
        r11 = b;
        a = LO8.selectFrom(r4, r12);
        b = HI8.selectFrom(r4, r12);
        r4 = a;
        r12 = b;
        a = LO8.selectFrom(r5, r13);
        b = HI8.selectFrom(r5, r13);
        r5 = a;
        r13 = b;
        a = LO8.selectFrom(r6, r14);
        b = HI8.selectFrom(r6, r14);
        r6 = a;
        r14 = b;
        a = LO8.selectFrom(r7, r15);
        b = HI8.selectFrom(r7, r15);
        r7 = a;
        r15 = b;
        a = LO4.selectFrom(r0, r4);
        b = HI4.selectFrom(r0, r4);
        r0 = a;
        r4 = b;
        a = LO4.selectFrom(r1, r5);
        b = HI4.selectFrom(r1, r5);
        r1 = a;
        r5 = b;
        a = LO4.selectFrom(r2, r6);
        b = HI4.selectFrom(r2, r6);
        r2 = a;
        r6 = b;
        a = LO4.selectFrom(r3, r7);
        b = HI4.selectFrom(r3, r7);
        r3 = a;
        r7 = b;
        a = LO4.selectFrom(r8, r12);
        b = HI4.selectFrom(r8, r12);
        r8 = a;
        r12 = b;
        a = LO4.selectFrom(r9, r13);
        b = HI4.selectFrom(r9, r13);
        r9 = a;
        r13 = b;
        a = LO4.selectFrom(r10, r14);
        b = HI4.selectFrom(r10, r14);
        r10 = a;
        r14 = b;
        a = LO4.selectFrom(r11, r15);
        b = HI4.selectFrom(r11, r15);
        r11 = a;
        r15 = b;
        a = LO2.selectFrom(r0, r2);
        b = HI2.selectFrom(r0, r2);
        r0 = a;
        r2 = b;
        a = LO2.selectFrom(r1, r3);
        b = HI2.selectFrom(r1, r3);
        r1 = a;
        r3 = b;
        a = LO2.selectFrom(r4, r6);
        b = HI2.selectFrom(r4, r6);
        r4 = a;
        r6 = b;
        a = LO2.selectFrom(r5, r7);
        b = HI2.selectFrom(r5, r7);
        r5 = a;
        r7 = b;
        a = LO2.selectFrom(r8, r10);
        b = HI2.selectFrom(r8, r10);
        r8 = a;
        r10 = b;
        a = LO2.selectFrom(r9, r11);
        b = HI2.selectFrom(r9, r11);
        r9 = a;
        r11 = b;
        a = LO2.selectFrom(r12, r14);
        b = HI2.selectFrom(r12, r14);
        r12 = a;
        r14 = b;
        a = LO2.selectFrom(r13, r15);
        b = HI2.selectFrom(r13, r15);
        r13 = a;
        r15 = b;
        a = LO1.selectFrom(r0, r1);
        b = HI1.selectFrom(r0, r1);
        r0 = a;
        r1 = b;
        a = LO1.selectFrom(r2, r3);
        b = HI1.selectFrom(r2, r3);
        r2 = a;
        r3 = b;
        a = LO1.selectFrom(r4, r5);
        b = HI1.selectFrom(r4, r5);
        r4 = a;
        r5 = b;
        a = LO1.selectFrom(r6, r7);
        b = HI1.selectFrom(r6, r7);
        r6 = a;
        r7 = b;
        a = LO1.selectFrom(r8, r9);
        b = HI1.selectFrom(r8, r9);
        r8 = a;
        r9 = b;
        a = LO1.selectFrom(r10, r11);
        b = HI1.selectFrom(r10, r11);
        r10 = a;
        r11 = b;
        a = LO1.selectFrom(r12, r13);
        b = HI1.selectFrom(r12, r13);
        r12 = a;
        r13 = b;
        a = LO1.selectFrom(r14, r15);
        b = HI1.selectFrom(r14, r15);
        r14 = a;
        r15 = b;
        r0.intoArray(words, 0 * run + ii);
        r1.intoArray(words, 1 * run + ii);
        r2.intoArray(words, 2 * run + ii);
        r3.intoArray(words, 3 * run + ii);
        r4.intoArray(words, 4 * run + ii);
        r5.intoArray(words, 5 * run + ii);
        r6.intoArray(words, 6 * run + ii);
        r7.intoArray(words, 7 * run + ii);
        r8.intoArray(words, 8 * run + ii);
        r9.intoArray(words, 9 * run + ii);
        r10.intoArray(words, 10 * run + ii);
        r11.intoArray(words, 11 * run + ii);
        r12.intoArray(words, 12 * run + ii);
        r13.intoArray(words, 13 * run + ii);
        r14.intoArray(words, 14 * run + ii);
        r15.intoArray(words, 15 * run + ii);
    }

    private static boolean allFinite(float[] scale, int groups, int rows) {
        for (int g = 0; g < groups; g++) {
            for (int t = 0; t < rows; t++) if (!Float.isFinite(scale[g * TILE + t])) return false;
        }
        return true;
    }
}
