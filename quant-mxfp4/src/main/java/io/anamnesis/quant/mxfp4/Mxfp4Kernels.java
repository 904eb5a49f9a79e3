package io.anamnesis.quant.mxfp4;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.E8M0;
import io.anamnesis.api.numeric.Float4E2M1;
import io.anamnesis.api.numeric.Floats;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * MXFP4 arithmetic as pure static functions. A block is 16 bytes of FP4 E2M1 pairs (byte
 * {@code j}: value {@code 2j} in the low nibble, {@code 2j+1} in the high one) and one E8M0
 * scale byte; value {@code k} of the block is {@code fp4 x 2^(scale - 127)} (gpt-oss's
 * {@code ldexp}), exact in F32 and BF16. With 256 scales and 16 codes there are 4096
 * possible values: {@link #table} works them out once per tensor and target, and the
 * kernels only look codes up.
 */
public final class Mxfp4Kernels {
    private Mxfp4Kernels() {
    }

    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Values per block, and bytes of FP4 pairs per block. */
    public static final int BLOCK = 32;
    public static final int BLOCK_BYTES = 16;

    /**
     * {@code table[scale * 16 + code]}: the target's bits of {@code fp4(code) x 2^(scale - 127)}
     * (F32 bits, or BF16/F16 bits in the low 16). Scale 255 is E8M0's NaN.
     */
    public static int[] table(DType target) {
        int[] t = new int[256 * 16];
        for (int s = 0; s < 256; s++) {
            float scale = E8M0.decode(s);
            for (int k = 0; k < 16; k++) t[s * 16 + k] = Floats.narrow(Float4E2M1.decode(k) * scale, target);
        }
        return t;
    }

    /**
     * Blocks {@code [firstBlock, firstBlock + count)} in storage order, each block's 32
     * values one after another: the untransposed layout ({@code [..., rows, groups * 32]}).
     */
    public static void blocks(MemorySegment blocks, MemorySegment scales, int[] table, boolean wide,
                              long firstBlock, long count, MemorySegment dest) {
        for (long b = 0; b < count; b++) {
            long block = firstBlock + b;
            int base = (scales.get(ValueLayout.JAVA_BYTE, block) & 0xFF) << 4;
            long src = block * BLOCK_BYTES;
            long lo = blocks.get(I64, src);
            long hi = blocks.get(I64, src + 8);
            if (wide) {
                long o = b * BLOCK * 4;
                for (int k = 0; k < 8; k++) {
                    int x = (int) (lo >>> (8 * k));
                    dest.set(I64, o + 8L * k, (table[base + (x & 15)] & 0xFFFF_FFFFL) | ((long) table[base + ((x >>> 4) & 15)] << 32));
                    int y = (int) (hi >>> (8 * k));
                    dest.set(I64, o + 64 + 8L * k, (table[base + (y & 15)] & 0xFFFF_FFFFL) | ((long) table[base + ((y >>> 4) & 15)] << 32));
                }
            } else {
                long o = b * BLOCK * 2;
                dest.set(I64, o, quad(table, base, (int) lo));
                dest.set(I64, o + 8, quad(table, base, (int) (lo >>> 16)));
                dest.set(I64, o + 16, quad(table, base, (int) (lo >>> 32)));
                dest.set(I64, o + 24, quad(table, base, (int) (lo >>> 48)));
                dest.set(I64, o + 32, quad(table, base, (int) hi));
                dest.set(I64, o + 40, quad(table, base, (int) (hi >>> 16)));
                dest.set(I64, o + 48, quad(table, base, (int) (hi >>> 32)));
                dest.set(I64, o + 56, quad(table, base, (int) (hi >>> 48)));
            }
        }
    }

    /** The four codes in the low 16 bits of {@code x} as four 16-bit values. */
    private static long quad(int[] t, int base, int x) {
        return (long) t[base + (x & 15)]
                | ((long) t[base + ((x >>> 4) & 15)] << 16)
                | ((long) t[base + ((x >>> 8) & 15)] << 32)
                | ((long) t[base + ((x >>> 12) & 15)] << 48);
    }

    /**
     * The transformers layout: blocks {@code [experts, rows, groups, 16]} hold
     * {@code W[e][r][c]} ({@code c = 32 g + k}); the output is {@code W.transpose(1, 2)},
     * {@code [experts, groups * 32, rows]}. Writes output rows {@code [firstRow, firstRow + rowCount)}
     * (each {@code rows} values, row {@code i} being {@code (e, c) = (i / (32 groups), i % (32 groups))})
     * to {@code dest} from its start.
     *
     * <p>Works a block column at a time: for each source row {@code r} the block {@code (e, r, g)}
     * is decoded once and its values go to up to 32 output rows at column {@code r}, in tiles of
     * {@link #TILE} source rows so that both the blocks read and the rows written stay in cache.
     */
    public static void transposed(MemorySegment blocks, MemorySegment scales, int rows, int groups, int[] table,
                                  boolean wide, long firstRow, long rowCount, MemorySegment dest) {
        long cols = 32L * groups;
        int width = wide ? 4 : 2;
        long outRowBytes = (long) rows * width;
        long end = firstRow + rowCount;
        long i = firstRow;
        int[] tile = new int[BLOCK * TILE];
        while (i < end) {
            long e = i / cols;
            int c = (int) (i % cols);
            int g = c / BLOCK;
            int k0 = c % BLOCK;
            int k1 = (int) Math.min(BLOCK, k0 + (end - i));
            for (int r0 = 0; r0 < rows; r0 += TILE) {
                int n = Math.min(TILE, rows - r0);
                for (int t = 0; t < n; t++) {
                    long block = (e * rows + r0 + t) * groups + g;
                    int base = (scales.get(ValueLayout.JAVA_BYTE, block) & 0xFF) << 4;
                    long src = block * BLOCK_BYTES;
                    long lo = blocks.get(I64, src);
                    long hi = blocks.get(I64, src + 8);
                    for (int k = k0; k < k1; k++) {
                        long half = k < 16 ? lo : hi;
                        int code = (int) (half >>> (4 * (k & 15))) & 15;
                        tile[k * TILE + t] = table[base + code];
                    }
                }
                for (int k = k0; k < k1; k++) {
                    long o = (i - firstRow + (k - k0)) * outRowBytes + (long) r0 * width;
                    int at = k * TILE;
                    if (wide) {
                        for (int t = 0; t < n; t++) dest.set(I32, o + 4L * t, tile[at + t]);
                    } else {
                        int t = 0;
                        for (; t + 4 <= n; t += 4) {
                            dest.set(I64, o + 2L * t, (long) tile[at + t] | ((long) tile[at + t + 1] << 16)
                                    | ((long) tile[at + t + 2] << 32) | ((long) tile[at + t + 3] << 48));
                        }
                        for (; t < n; t++) dest.set(I16, o + 2L * t, (short) tile[at + t]);
                    }
                }
            }
            i += k1 - k0;
        }
    }

    /** Source rows per tile of {@link #transposed}: 32 output rows x 64 values stay in L1. */
    static final int TILE = 64;
}
