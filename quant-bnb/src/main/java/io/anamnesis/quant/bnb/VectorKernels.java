package io.anamnesis.quant.bnb;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;


import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * The BF16 paths of the kernels on {@code jdk.incubator.vector}, used only when that module
 * is in the boot layer and 512-bit vectors are available (so that a 16-entry code table
 * fits one int vector). Each computes exactly the scalar kernel's float32 operations in the
 * same order and narrows with the same round-to-nearest-even rule (NaN kept quiet), so the
 * bytes are identical; the tests compare both paths.
 */
final class VectorKernels {
    private VectorKernels() {
    }

    private static final VectorSpecies<Byte> B128 = ByteVector.SPECIES_128;
    private static final VectorSpecies<Integer> I512 = IntVector.SPECIES_512;
    private static final VectorSpecies<Float> F512 = FloatVector.SPECIES_512;
    private static final VectorSpecies<Short> S256 = ShortVector.SPECIES_256;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    /** True when the hardware has 512-bit vectors for ints and floats (checked once). */
    static boolean usable() {
        return IntVector.SPECIES_PREFERRED.vectorBitSize() >= 512
                && FloatVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
    }

    /** Round-to-nearest-even to the upper 16 bits; right for every non-NaN input. */
    private static IntVector roundToBf16(IntVector bits) {
        return bits.add(bits.lanewise(VectorOperators.LSHR, 16).and(1)).add(0x7FFF)
                .lanewise(VectorOperators.LSHR, 16);
    }

    /** F32 bits to BF16 bits in each lane (zero-extended): {@code Floats.f32ToBf16}, lane-wise. */
    private static IntVector toBf16(IntVector bits) {
        IntVector rounded = roundToBf16(bits);
        VectorMask<Integer> nan = bits.and(0x7FFF_FFFF).compare(VectorOperators.GT, 0x7F80_0000);
        return rounded.blend(bits.lanewise(VectorOperators.LSHR, 16).or(0x0040), nan);
    }

    /** {@link FourBit#decode} to BF16: the same blocks, the lookups 16 packed bytes at a time. */
    static void fourBitBf16(MemorySegment packed, FourBit.Absmax absmax, float[] codeValues, long blocksize,
                            long first, long count, MemorySegment dest) {
        FloatVector values = FloatVector.fromArray(F512, codeValues, 0);
        long end = first + count;
        long e = first;
        long o = 0;
        if (count == 0) return;
        long block = first / blocksize;
        float[] scales = FourBit.absmaxBuffer(block, end, blocksize);
        int j = scales.length;
        while (e < end) {
            if (j == scales.length) {
                absmax.fill(block, scales, (int) Math.min(scales.length, (end - 1) / blocksize - block + 1));
                j = 0;
            }
            long blockEnd = Math.min((block + 1) * blocksize, end);
            IntVector table = toBf16(values.mul(scales[j++]).reinterpretAsInts());
            block++;
            long s = e;
            if ((s & 1) == 0) {
                for (; blockEnd - s >= 32; s += 32, o += 64) {
                    // One int lane per packed byte: (value of high nibble) | (value of low nibble) << 16.
                    IntVector v = ((IntVector) ByteVector.fromMemorySegment(B128, packed, s >>> 1, LE)
                            .convertShape(VectorOperators.B2I, I512, 0)).and(0xFF);
                    IntVector hi = v.lanewise(VectorOperators.LSHR, 4).selectFrom(table);
                    IntVector lo = v.and(15).selectFrom(table);
                    hi.or(lo.lanewise(VectorOperators.LSHL, 16)).intoMemorySegment(dest, o, LE);
                }
            }
            if (s < blockEnd) {
                int[] lanes = table.toArray();
                long[] t = new long[16];
                for (int c = 0; c < 16; c++) t[c] = lanes[c] & 0xFFFFL;
                o = FourBit.run16(packed, t, s, blockEnd, dest, o);
            }
            e = blockEnd;
        }
    }

    /** {@link Int8Rows#decode} to BF16: {@code (float(w) * scb) * k} on 16 lanes, then narrowed. */
    static void int8Bf16(MemorySegment weight, MemorySegment scb, long rowLength, long first, long count,
                         MemorySegment dest) {
        long end = first + count;
        long e = first;
        long o = 0;
        while (e < end) {
            long row = e / rowLength;
            long rowEnd = Math.min((row + 1) * rowLength, end);
            float scale = scb.get(io.anamnesis.api.numeric.LittleEndian.F32, row * 4);
            // With a finite scale, (w * scale) * k is finite or infinite, never NaN: the NaN
            // lanes of toBf16 cannot occur and the plain rounding formula is exact.
            // Two loops rather than a choice inside one: a vector value merged from two branches
            // defeats C2's box elimination and allocates per iteration.
            if (Float.isFinite(scale)) {
                for (; rowEnd - e >= 16; e += 16, o += 32) {
                    FloatVector f = (FloatVector) ByteVector.fromMemorySegment(B128, weight, e, LE)
                            .convertShape(VectorOperators.B2F, F512, 0);
                    roundToBf16(f.mul(scale).mul(Int8Rows.INV_127).reinterpretAsInts())
                            .convertShape(VectorOperators.I2S, S256, 0).intoMemorySegment(dest, o, LE);
                }
            } else {
                for (; rowEnd - e >= 16; e += 16, o += 32) {
                    FloatVector f = (FloatVector) ByteVector.fromMemorySegment(B128, weight, e, LE)
                            .convertShape(VectorOperators.B2F, F512, 0);
                    toBf16(f.mul(scale).mul(Int8Rows.INV_127).reinterpretAsInts())
                            .convertShape(VectorOperators.I2S, S256, 0).intoMemorySegment(dest, o, LE);
                }
            }
            for (; e < rowEnd; e++, o += 2) {
                float v = Int8Rows.value(weight.get(java.lang.foreign.ValueLayout.JAVA_BYTE, e), scale);
                dest.set(io.anamnesis.api.numeric.LittleEndian.I16, o, io.anamnesis.api.numeric.Floats.f32ToBf16(v));
            }
        }
    }
}
