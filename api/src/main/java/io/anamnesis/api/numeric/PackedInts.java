package io.anamnesis.api.numeric;

import java.lang.foreign.MemorySegment;

/**
 * Unsigned integers of 1 to 32 bits packed densely, least significant bit first, into a
 * stream of little-endian 32-bit words: value {@code n} of a stream occupies bits
 * {@code n*bits .. n*bits+bits-1}, counting from bit 0 of the first word. For 1, 2, 4, 8, 16
 * and 32 bits a value never crosses a word; for other widths it may (3-bit value 10 takes
 * the top two bits of word 0 and the lowest of word 1), which the same rule covers.
 *
 * <p>GPTQ packs along a matrix's rows, compressed-tensors along its columns (and its zero
 * points along rows); each is a stream per column or per row, so one set of primitives reads
 * them all.
 */
public final class PackedInts {
    private PackedInts() {
    }

    /** Words that hold {@code values} values of {@code bits} bits: {@code ceil(values * bits / 32)}. */
    public static long words(long values, int bits) {
        checkBits(bits);
        return ceilDiv(Math.multiplyExact(values, (long) bits), 32);
    }

    /** Values of {@code bits} bits that fit one word exactly, or 0 when they do not tile it. */
    public static int perWord(int bits) {
        checkBits(bits);
        return 32 % bits == 0 ? 32 / bits : 0;
    }

    /**
     * Value {@code index} of the stream of words starting at byte {@code base} of
     * {@code words}, as an unsigned int (for 32 bits, the raw word).
     */
    public static int get(MemorySegment words, long base, long index, int bits) {
        long bit = index * bits;
        long at = base + (bit >>> 5) * 4;
        int shift = (int) (bit & 31);
        int value = words.get(LittleEndian.I32, at) >>> shift;
        if (shift + bits > 32) value |= words.get(LittleEndian.I32, at + 4) << (32 - shift);
        return bits == 32 ? value : value & ((1 << bits) - 1);
    }

    /**
     * Values {@code [first, first + count)} of a stream, each minus {@code offset} (the
     * offset-binary bias that makes a signed range unsigned), into {@code out} from
     * {@code outOffset}.
     */
    public static void unpack(MemorySegment words, long base, long first, int bits, int offset,
                              int[] out, int outOffset, int count) {
        checkBits(bits);
        for (int i = 0; i < count; i++) out[outOffset + i] = get(words, base, first + i, bits) - offset;
    }

    private static void checkBits(int bits) {
        if (bits < 1 || bits > 32) throw new IllegalArgumentException("packed ints of " + bits + " bits");
    }

    private static long ceilDiv(long a, long b) {
        return a / b + (a % b == 0 ? 0 : 1);
    }
}
