package io.anamnesis.quant.compressed.tensors;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * The Vector API form of {@link CtKernels}' 4-bit table lookups, byte for byte the same
 * (both read the same tables; a lane only selects an entry). 32 codes per step: 16 bytes
 * are loaded, each duplicated into two byte lanes, the low nibble kept in even lanes and
 * the high one in odd lanes (the storage order), then each half of 16 indices selects from
 * its group's 16-entry table ({@code selectFrom}: {@code vpermw} for 16-bit targets,
 * {@code vpermd} for F32); with 512-bit vectors, 16-bit targets take one two-table select
 * a step instead ({@link #row16Wide}). Loaded only when {@code jdk.incubator.vector} is
 * resolved.
 */
final class CtVectorKernels {
    private CtVectorKernels() {
    }

    private static final VectorSpecies<Byte> B128 = ByteVector.SPECIES_128;
    private static final VectorSpecies<Byte> B256 = ByteVector.SPECIES_256;
    private static final VectorSpecies<Short> S256 = ShortVector.SPECIES_256;
    private static final VectorSpecies<Integer> I512 = IntVector.SPECIES_512;
    private static final VectorSpecies<Float> F512 = FloatVector.SPECIES_512;
    private static final VectorSpecies<Short> S512 = ShortVector.SPECIES_512;
    /** Whether this JVM runs 512-bit vectors in hardware ({@link #row16Wide}). */
    private static final boolean VECTORS_512 = IntVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
    /** Codes 16..31 of a step (int lanes 8..15) index the second table of a two-table select: + 32. */
    private static final IntVector SECOND_TABLE = IntVector.fromArray(I512,
            new int[] {0, 0, 0, 0, 0, 0, 0, 0, 0x20_0020, 0x20_0020, 0x20_0020, 0x20_0020, 0x20_0020, 0x20_0020, 0x20_0020, 0x20_0020}, 0);
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final VectorShuffle<Byte> DUPLICATE = VectorShuffle.fromOp(B256, i -> i / 2);
    private static final VectorMask<Byte> ODD = VectorMask.fromLong(B256, 0xAAAA_AAAAL);

    /** 16-bit targets need 256-bit vectors; F32 needs 512-bit ones (a 16-entry table of ints). */
    static boolean supported(boolean wide) {
        int bits = IntVector.SPECIES_PREFERRED.vectorBitSize();
        return wide ? bits >= 512 : bits >= 256;
    }

    /**
     * A row's BF16 tables, 16 entries a group: {@link CtKernels#fill}'s products
     * ({@code (values[k] - zero) * scale}, or {@code values[k] * scale} without zeros) narrowed
     * as {@link io.anamnesis.api.numeric.Floats#f32ToBf16(int)} narrows each (round to nearest
     * even; a NaN kept quiet with its sign and upper payload), one 16-lane vector a group.
     * Needs 512-bit vectors ({@link #supported supported(true)}).
     */
    static void bf16Tables(float[] values, float[] scales, float[] zeros, int scaleRow, int groups, short[] table16) {
        FloatVector v = FloatVector.fromArray(F512, values, 0);
        for (int g = 0; g < groups; g++) {
            FloatVector shifted = zeros == null ? v : v.sub(zeros[scaleRow + g]);
            IntVector b = shifted.mul(scales[scaleRow + g]).reinterpretAsInts();
            IntVector high = b.lanewise(VectorOperators.LSHR, 16);
            IntVector rounded = b.add(0x7FFF).add(high.and(1)).lanewise(VectorOperators.LSHR, 16);
            IntVector bits = rounded.blend(high.or(0x0040), b.and(0x7FFF_FFFF).compare(VectorOperators.GT, 0x7F80_0000));
            bits.convertShape(VectorOperators.I2S, S256, 0).reinterpretAsShorts().intoArray(table16, 16 * g);
        }
    }

    /** The 32 codes from byte {@code at}, one per byte lane, in storage order. */
    private static ByteVector nibbles(MemorySegment codes, long at) {
        ByteVector bytes = ByteVector.fromMemorySegment(B128, codes, at, LE);
        ByteVector twice = ((ByteVector) bytes.reinterpretShape(B256, 0)).rearrange(DUPLICATE);
        ByteVector low = twice.and((byte) 15);
        ByteVector high = twice.lanewise(VectorOperators.LSHR, 4).and((byte) 15);
        return low.blend(high, ODD);
    }

    /**
     * One row of codes from byte {@code src}; the 16 codes of half {@code h} (columns
     * {@code 16h .. 16h+15}) use the table at {@code base[halfGroup[h]]}, which must have 16
     * readable entries after it (the tables are padded). Columns past the last whole step are
     * left to the caller.
     *
     * @return the columns done (a multiple of 32)
     */
    static int row16(MemorySegment codes, long src, int cols, short[] table, int[] base, int[] halfGroup,
                     MemorySegment dest, long out) {
        return VECTORS_512 ? row16Wide(codes, src, cols, table, base, halfGroup, dest, out)
                : row16Narrow(codes, src, cols, table, base, halfGroup, dest, out);
    }

    /**
     * {@link #row16} with 512-bit vectors: a step's 16 bytes widened to 16 ints, each int made
     * the two indices of its byte ({@code low | high << 16}, which read as 32 shorts are the
     * codes in storage order), the second half's indices moved to the second table, and one
     * two-table select ({@code vpermt2w}) gives the step's 32 values: one 64-byte store.
     * A 45 M-value int4 layer to BF16 in 0.65-0.75x the 256-bit form's time (docs/benchmarks.md).
     */
    static int row16Wide(MemorySegment codes, long src, int cols, short[] table, int[] base, int[] halfGroup,
                         MemorySegment dest, long out) {
        int c = 0;
        for (; c + 32 <= cols; c += 32) {
            int h = c >>> 4;
            ShortVector t0 = ShortVector.fromArray(S512, table, base[halfGroup[h]]);
            ShortVector t1 = ShortVector.fromArray(S512, table, base[halfGroup[h + 1]]);
            IntVector b = (IntVector) ByteVector.fromMemorySegment(B128, codes, src + (c >>> 1), LE)
                    .convertShape(VectorOperators.B2I, I512, 0);
            IntVector pairs = b.and(15).or(b.and(0xF0).lanewise(VectorOperators.LSHL, 12)).or(SECOND_TABLE);
            pairs.reinterpretAsShorts().selectFrom(t0, t1).intoMemorySegment(dest, out + 2L * c, LE);
        }
        return c;
    }

    /** {@link #row16} with 256-bit vectors: each half's 16 codes select from its own table. */
    static int row16Narrow(MemorySegment codes, long src, int cols, short[] table, int[] base, int[] halfGroup,
                           MemorySegment dest, long out) {
        int c = 0;
        for (; c + 32 <= cols; c += 32) {
            int h = c >>> 4;
            ShortVector t0 = ShortVector.fromArray(S256, table, base[halfGroup[h]]);
            ShortVector t1 = ShortVector.fromArray(S256, table, base[halfGroup[h + 1]]);
            ByteVector z = nibbles(codes, src + (c >>> 1));
            ShortVector i0 = (ShortVector) z.convertShape(VectorOperators.B2S, S256, 0);
            ShortVector i1 = (ShortVector) z.convertShape(VectorOperators.B2S, S256, 1);
            i0.selectFrom(t0).intoMemorySegment(dest, out + 2L * c, LE);
            i1.selectFrom(t1).intoMemorySegment(dest, out + 2L * c + 32, LE);
        }
        return c;
    }

    /** {@link #row16} for F32: 16-entry int tables. */
    static int row32(MemorySegment codes, long src, int cols, int[] table, int[] base, int[] halfGroup,
                     MemorySegment dest, long out) {
        int c = 0;
        for (; c + 32 <= cols; c += 32) {
            int h = c >>> 4;
            IntVector t0 = IntVector.fromArray(I512, table, base[halfGroup[h]]);
            IntVector t1 = IntVector.fromArray(I512, table, base[halfGroup[h + 1]]);
            ByteVector z = nibbles(codes, src + (c >>> 1));
            IntVector i0 = (IntVector) z.convertShape(VectorOperators.B2I, I512, 0);
            IntVector i1 = (IntVector) z.convertShape(VectorOperators.B2I, I512, 1);
            i0.selectFrom(t0).intoMemorySegment(dest, out + 4L * c, LE);
            i1.selectFrom(t1).intoMemorySegment(dest, out + 4L * c + 64, LE);
        }
        return c;
    }
}
