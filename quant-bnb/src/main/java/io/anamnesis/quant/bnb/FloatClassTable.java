package io.anamnesis.quant.bnb;

import java.util.Arrays;
import java.util.function.IntUnaryOperator;

/**
 * A rank of every float32 by its top 16 bits: the floats that share them (sign, exponent, the
 * first 7 mantissa bits) form a class of 65,536 consecutive values, and where a rank function
 * is the same on the whole class, one table entry stands for it.
 *
 * <p>The function must be monotone in the value for each sign (a count of the thresholds a
 * value exceeds; a sign bit above the rank of the magnitude), so that two floats with one rank
 * have that rank on everything between them. Then a run of classes whose first and last float
 * agree is uniform as a whole, and the table is found by halving runs that do not agree: a
 * few hundred evaluations instead of two per class. NaNs are no part of that order; the
 * classes from the infinity up are looked at one by one.
 *
 * <p>A class that one threshold divides holds two neighbouring ranks, and its entry says which
 * ({@link #DIVIDED} with the lower one): one comparison with that threshold decides. Any other
 * class (an infinity's, which holds NaNs too) is {@link #SPECIAL}: ask the function.
 */
final class FloatClassTable {
    private FloatClassTable() {
    }

    /** The mark of a class whose floats have rank {@code entry & 0x7F} or the one above it. */
    static final int DIVIDED = 0x80;
    /** The entry of a class whose floats no single comparison sorts. */
    static final byte SPECIAL = (byte) 0xFF;

    /**
     * The table of {@code rank} (given a float's raw bits, a rank in 0..126): each class's
     * rank, {@code DIVIDED | lower rank}, or {@link #SPECIAL}.
     */
    static byte[] build(IntUnaryOperator rank) {
        byte[] table = new byte[1 << 16];
        // +0 up to the largest finite float, and -0 down to the most negative one
        fill(table, rank, 0x0000, 0x7F7F);
        fill(table, rank, 0x8000, 0xFF7F);
        // the infinities' classes (the infinity, then NaNs) and the NaN classes after them
        for (int top = 0x7F80; top <= 0x7FFF; top++) {
            table[top] = entry(rank, top);
            table[top | 0x8000] = entry(rank, top | 0x8000);
        }
        return table;
    }

    private static void fill(byte[] table, IntUnaryOperator rank, int first, int last) {
        int low = rank.applyAsInt(first << 16);
        if (low == rank.applyAsInt(last << 16 | 0xFFFF)) {
            Arrays.fill(table, first, last + 1, (byte) low);
        } else if (first == last) {
            table[first] = entry(rank, first);
        } else {
            int middle = (first + last) >>> 1;
            fill(table, rank, first, middle);
            fill(table, rank, middle + 1, last);
        }
    }

    /** The entry of one class, from its first and last float. */
    private static byte entry(IntUnaryOperator rank, int top) {
        int low = rank.applyAsInt(top << 16);
        int high = rank.applyAsInt(top << 16 | 0xFFFF);
        if (low == high) return (byte) low;
        boolean nan = Float.isNaN(Float.intBitsToFloat(top << 16)) || Float.isNaN(Float.intBitsToFloat(top << 16 | 0xFFFF));
        return !nan && Math.abs(low - high) == 1 ? (byte) (DIVIDED | Math.min(low, high)) : SPECIAL;
    }
}
