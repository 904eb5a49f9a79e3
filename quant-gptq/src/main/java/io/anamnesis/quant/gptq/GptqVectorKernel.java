package io.anamnesis.quant.gptq;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.LittleEndian;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * The Vector API form of {@link GptqKernel#dequantizeRowsScalar} for 2, 4 and 8 bits to BF16
 * or F32, bit-identical to it (same integer difference, same single float32 multiply, same
 * round-to-nearest-even). Loaded only when {@code jdk.incubator.vector} is in the boot layer.
 *
 * <p>Per tile of {@link #TILE} output rows and {@link #CHUNK} inputs, the packed words are
 * first transposed into a small int buffer (one contiguous run of words per output row).
 * Then each vector of L consecutive inputs of one output row is one load of that run, one
 * lane permutation (lane l takes word {@code l*bits/32}), one variable shift and a mask:
 * every bit width the same way. Groups that are uniform over a vector broadcast their scale
 * and zero; act-order rows gather them. A tile with a non-finite scale goes to the scalar
 * kernel, which owns the NaN rule of the BF16 narrowing.
 */
final class GptqVectorKernel {
    static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
    static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    static final VectorSpecies<Short> S = VectorSpecies.of(short.class, VectorShape.forBitSize(I.vectorBitSize() / 2));
    static final int L = I.length();
    static final int TILE = 32;
    static final int CHUNK = 1024;

    private GptqVectorKernel() {
    }

    static boolean supports(GptqKernel.Layout l, DType target) {
        return l.bits() != 3 && (L * l.bits()) % 32 == 0 && L >= 8
                && (target.equals(DType.BF16) || target.equals(DType.F32));
    }

    static void dequantizeRows(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales, int[] groupOf,
                               GptqKernel.Layout l, int firstRow, int rowCount, DType target, MemorySegment dest) {
        int bits = l.bits();
        int perWord = 32 / bits;
        int mask = (1 << bits) - 1;
        int in = l.in();
        int out = l.out();
        boolean bf16 = target.equals(DType.BF16);
        int elementBytes = bf16 ? 2 : 4;
        // a run per output row, padded off a power of two so that the rows of the buffer do not
        // fall into the same cache sets
        int wordsPerRow = CHUNK / perWord + 16;
        int[] words = new int[TILE * wordsPerRow + L];
        float[] scale = new float[l.groups() * TILE];
        int[] zero = new int[l.groups() * TILE];

        int[] pick = new int[L];
        int[] shift = new int[L];
        for (int lane = 0; lane < L; lane++) {
            pick[lane] = lane * bits / 32;
            shift[lane] = lane * bits % 32;
        }
        VectorShuffle<Integer> picker = VectorShuffle.fromArray(I, pick, 0);
        IntVector shifts = IntVector.fromArray(I, shift, 0);

        // per vector of inputs: its group when all L rows share one, else -1 (gather)
        int blocks = in / L;
        int[] blockGroup = new int[blocks];
        int[] groupRow = new int[in];
        for (int i = 0; i < in; i++) groupRow[i] = groupOf[i] * TILE;
        for (int b = 0; b < blocks; b++) {
            int g = groupOf[b * L];
            for (int k = 1; k < L && g >= 0; k++) if (groupOf[b * L + k] != g) g = -1;
            blockGroup[b] = g;
        }

        int end = firstRow + rowCount;
        for (int o0 = firstRow; o0 < end; o0 += TILE) {
            int rows = Math.min(TILE, end - o0);
            GptqKernel.loadGroupParameters(qzeros, scales, l, o0, rows, TILE, scale, zero);
            if (!allFinite(scale, l.groups(), rows)) {
                MemorySegment part = dest.asSlice((long) (o0 - firstRow) * in * elementBytes, (long) rows * in * elementBytes);
                GptqKernel.dequantizeRowsScalar(qweight, qzeros, scales, groupOf, l, o0, rows, target, part);
                continue;
            }
            for (int i0 = 0; i0 < in; i0 += CHUNK) {
                int cols = Math.min(CHUNK, in - i0);
                int r0 = i0 / perWord;
                int nr = (cols + perWord - 1) / perWord;
                for (int r = 0; r < nr; r++) {
                    long rowBase = ((long) (r0 + r) * out + o0) * 4;
                    for (int t = 0; t < rows; t++) words[t * wordsPerRow + r] = qweight.get(LittleEndian.I32, rowBase + t * 4L);
                }
                int full = cols - cols % L;
                for (int t = 0; t < rows; t++) {
                    long at = ((long) (o0 - firstRow + t) * in + i0) * elementBytes;
                    int wordBase = t * wordsPerRow;
                    for (int ii = 0; ii < full; ii += L) {
                        IntVector q = IntVector.fromArray(I, words, wordBase + ii / perWord)
                                .rearrange(picker).lanewise(VectorOperators.LSHR, shifts).and(mask);
                        int g = blockGroup[(i0 + ii) / L];
                        FloatVector f;
                        if (g >= 0) {
                            f = ((FloatVector) q.sub(zero[g * TILE + t]).convert(VectorOperators.I2F, 0))
                                    .mul(scale[g * TILE + t]);
                        } else {
                            IntVector z = IntVector.fromArray(I, zero, t, groupRow, i0 + ii);
                            FloatVector s = FloatVector.fromArray(F, scale, t, groupRow, i0 + ii);
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
                        int i = i0 + ii;
                        int q = (words[wordBase + ii / perWord] >>> (bits * (ii % perWord))) & mask;
                        int g = groupRow[i] + t;
                        float v = scale[g] * (float) (q - zero[g]);
                        long off = at + (long) ii * elementBytes;
                        if (bf16) {
                            dest.set(LittleEndian.I16, off, io.anamnesis.api.numeric.Floats.f32ToBf16(v));
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
