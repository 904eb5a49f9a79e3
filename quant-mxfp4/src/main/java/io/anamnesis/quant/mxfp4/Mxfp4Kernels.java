package io.anamnesis.quant.mxfp4;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.E8M0;
import io.anamnesis.api.numeric.Float4E2M1;
import io.anamnesis.api.numeric.FloatTarget;
import io.anamnesis.api.numeric.KernelRace;
import io.anamnesis.api.numeric.Kernels;

import java.lang.foreign.Arena;
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
 *
 * <p>The transposed layout has two implementations giving the same bytes: the scalar tiles
 * of {@link #transposed(MemorySegment, MemorySegment, int, int, int[], int[], boolean, long, long, MemorySegment)}
 * and a Vector API one ({@code Mxfp4VectorKernels}), which exists only when
 * {@code jdk.incubator.vector} is resolved and the hardware has 512-bit vectors.
 */
public final class Mxfp4Kernels {
    private Mxfp4Kernels() {
    }

    /** Which implementation runs the transposed kernel. */
    public enum Impl { SCALAR, VECTOR }

    private static final boolean VECTOR_AVAILABLE = detectVector();

    private static boolean detectVector() {
        if (!Kernels.vectorAllowed()) return false;
        try {
            return Mxfp4VectorKernels.supported();
        } catch (LinkageError e) {
            return false;
        }
    }

    /** True when {@link Kernels#vectorAllowed()} and the hardware has 512-bit vectors. */
    public static boolean vectorAvailable() {
        return VECTOR_AVAILABLE;
    }

    /**
     * The vector kernel once it has beaten the scalar one ({@link KernelRace}: until C2 has
     * compiled it, it is far slower), else the scalar one.
     */
    public static Impl best() {
        return VECTOR_AVAILABLE && RACE.getAsBoolean() ? Impl.VECTOR : Impl.SCALAR;
    }

    /** Races the two on 256 source rows x 8 blocks (64 K values) to BF16. */
    private static final KernelRace RACE = new KernelRace("mxfp4", () -> Probe.INSTANCE.run(Impl.SCALAR),
            () -> Probe.INSTANCE.run(Impl.VECTOR));

    /** The race's private input and output, made when the race starts. */
    private static final class Probe {
        static final Probe INSTANCE = new Probe();
        static final int ROWS = 256;
        static final int GROUPS = 8;
        final MemorySegment blocks = Arena.global().allocate((long) ROWS * GROUPS * BLOCK_BYTES);
        final MemorySegment scales = Arena.global().allocate((long) ROWS * GROUPS);
        final MemorySegment dest = Arena.global().allocate(2L * ROWS * GROUPS * BLOCK);
        final Tables tables = Tables.of(DType.BF16);

        Probe() {
            for (long i = 0; i < blocks.byteSize(); i++) blocks.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 73));
            for (long i = 0; i < scales.byteSize(); i++) scales.set(ValueLayout.JAVA_BYTE, i, (byte) (118 + i % 9));
        }

        void run(Impl impl) {
            transposed(impl, blocks, scales, ROWS, GROUPS, tables, 0, (long) GROUPS * BLOCK, dest);
        }
    }

    /**
     * What the kernels of one target read, made once per tensor (a few hundred KB: not per chunk).
     *
     * @param wide   whether the target is F32
     * @param table  {@link #table} of the target
     * @param pairs  {@link #pairs} of it for 16-bit targets; null for F32
     * @param narrow for 16-bit targets where the vector kernel may run, the table as shorts; else null
     */
    public record Tables(boolean wide, int[] table, int[] pairs, short[] narrow) {
        /** The tables of {@code target}: BF16, F16 or F32. */
        public static Tables of(DType target) {
            int[] table = Mxfp4Kernels.table(target);
            boolean wide = FloatTarget.of(target).bytes() == 4;
            int[] pairs = wide ? null : Mxfp4Kernels.pairs(table);
            short[] narrow = wide || !VECTOR_AVAILABLE ? null : Mxfp4VectorKernels.narrow(table);
            return new Tables(wide, table, pairs, narrow);
        }
    }

    /**
     * {@link #transposed(MemorySegment, MemorySegment, int, int, int[], int[], boolean, long, long, MemorySegment)}
     * through {@code impl}; {@link Impl#VECTOR} needs {@link #vectorAvailable()}. Segments
     * on the Java heap other than {@code byte[]} ones, which vectors cannot access, take the
     * scalar kernel.
     */
    public static void transposed(Impl impl, MemorySegment blocks, MemorySegment scales, int rows, int groups,
                                  Tables tables, long firstRow, long rowCount, MemorySegment dest) {
        if (impl == Impl.VECTOR) {
            if (!VECTOR_AVAILABLE) throw new IllegalStateException("the MXFP4 vector kernel is not available here");
            if (vectorAccessible(blocks) && vectorAccessible(scales) && vectorAccessible(dest)) {
                Mxfp4VectorKernels.transposed(blocks, scales, rows, groups,
                        tables.wide() ? tables.table() : tables.narrow(), tables.wide(), firstRow, rowCount, dest);
                return;
            }
        }
        transposed(blocks, scales, rows, groups, tables.table(), tables.pairs(), tables.wide(), firstRow, rowCount, dest);
    }

    private static boolean vectorAccessible(MemorySegment s) {
        return s.heapBase().map(base -> base instanceof byte[]).orElse(true);
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
        FloatTarget to = FloatTarget.of(target);
        int[] t = new int[256 * 16];
        for (int s = 0; s < 256; s++) {
            float scale = E8M0.decode(s);
            for (int k = 0; k < 16; k++) t[s * 16 + k] = to.bits(Float4E2M1.decode(k) * scale);
        }
        return t;
    }

    /**
     * Blocks {@code [firstBlock, firstBlock + count)} in storage order, each block's 32
     * values one after another: the untransposed layout ({@code [..., rows, groups * 32]}).
     *
     * @param pairs {@link #pairs} of the table for 16-bit targets; null for F32
     */
    public static void blocks(MemorySegment blocks, MemorySegment scales, int[] table, int[] pairs, boolean wide,
                              long firstBlock, long count, MemorySegment dest) {
        for (long b = 0; b < count; b++) {
            long block = firstBlock + b;
            int s = scales.get(ValueLayout.JAVA_BYTE, block) & 0xFF;
            long src = block * BLOCK_BYTES;
            long lo = blocks.get(I64, src);
            long hi = blocks.get(I64, src + 8);
            if (wide) {
                int base = s << 4;
                long o = b * BLOCK * 4;
                for (int k = 0; k < 8; k++) {
                    int x = (int) (lo >>> (8 * k));
                    dest.set(I64, o + 8L * k, (table[base + (x & 15)] & 0xFFFF_FFFFL) | ((long) table[base + ((x >>> 4) & 15)] << 32));
                    int y = (int) (hi >>> (8 * k));
                    dest.set(I64, o + 64 + 8L * k, (table[base + (y & 15)] & 0xFFFF_FFFFL) | ((long) table[base + ((y >>> 4) & 15)] << 32));
                }
            } else {
                int base = s << 8;
                long o = b * BLOCK * 2;
                for (int k = 0; k < 4; k++) {
                    dest.set(I64, o + 8L * k, two(pairs, base, lo >>> (16 * k)));
                    dest.set(I64, o + 32 + 8L * k, two(pairs, base, hi >>> (16 * k)));
                }
            }
        }
    }

    /** The two bytes at the bottom of {@code v}: four 16-bit values. */
    private static long two(int[] pairs, int base, long v) {
        return (pairs[base | ((int) v & 0xFF)] & 0xFFFF_FFFFL) | ((long) pairs[base | ((int) (v >>> 8) & 0xFF)] << 32);
    }

    /**
     * {@code pairs[scale * 256 + byte]}: the two 16-bit values of a byte of FP4 pairs (low
     * nibble's in the low half), from {@link #table}; for 16-bit targets, one lookup per two values.
     */
    public static int[] pairs(int[] table) {
        int[] p = new int[256 * 256];
        for (int s = 0; s < 256; s++) {
            for (int hi = 0; hi < 16; hi++) {
                int h = table[s * 16 + hi] << 16;
                for (int lo = 0; lo < 16; lo++) p[(s << 8) | (hi << 4) | lo] = (table[s * 16 + lo] & 0xFFFF) | h;
            }
        }
        return p;
    }

    /**
     * The transformers layout: blocks {@code [experts, rows, groups, 16]} hold
     * {@code W[e][r][c]} ({@code c = 32 g + k}); the output is {@code W.transpose(1, 2)},
     * {@code [experts, groups * 32, rows]}. Writes output rows {@code [firstRow, firstRow + rowCount)}
     * (each {@code rows} values, row {@code i} being {@code (e, c) = (i / (32 groups), i % (32 groups))})
     * to {@code dest} from its start.
     *
     * <p>Works a block column at a time, in tiles of {@link #TILE} source rows: each block
     * {@code (e, r, g)} of the tile is decoded once into a small column-major tile (for 16-bit
     * targets a byte's two values in one int, one lookup in {@link #pairs}), which is then
     * written out as row pieces, so that both the blocks read and the rows written stay in cache.
     *
     * @param pairs {@link #pairs} of the table for 16-bit targets; null for F32
     */
    public static void transposed(MemorySegment blocks, MemorySegment scales, int rows, int groups, int[] table,
                                  int[] pairs, boolean wide, long firstRow, long rowCount, MemorySegment dest) {
        long cols = 32L * groups;
        int width = wide ? 4 : 2;
        long outRowBytes = (long) rows * width;
        long end = firstRow + rowCount;
        long i = firstRow;
        // wide: one value per column and source row; else one pair (two columns) per byte and source row
        int[] tile = new int[BLOCK * TILE];
        while (i < end) {
            long e = i / cols;
            int c = (int) (i % cols);
            int g = c / BLOCK;
            int k0 = c % BLOCK;
            int k1 = (int) Math.min(BLOCK, k0 + (end - i));
            int j0 = k0 >>> 1;
            int j1 = (k1 + 1) >>> 1;
            for (int r0 = 0; r0 < rows; r0 += TILE) {
                int n = Math.min(TILE, rows - r0);
                long block = (e * rows + r0) * groups + g;
                for (int t = 0; t < n; t++, block += groups) {
                    int s = scales.get(ValueLayout.JAVA_BYTE, block) & 0xFF;
                    long src = block * BLOCK_BYTES;
                    if (wide) {
                        int b = s << 4;
                        for (int j = j0; j < j1; j++) {
                            int x = blocks.get(ValueLayout.JAVA_BYTE, src + j);
                            tile[(2 * j) * TILE + t] = table[b + (x & 15)];
                            tile[(2 * j + 1) * TILE + t] = table[b + ((x >>> 4) & 15)];
                        }
                    } else {
                        int b = s << 8;
                        for (int j = j0; j < j1; j++) tile[j * TILE + t] = pairs[b | (blocks.get(ValueLayout.JAVA_BYTE, src + j) & 0xFF)];
                    }
                }
                long o = (i - firstRow) * outRowBytes + (long) r0 * width;
                for (int k = k0; k < k1; k++) {
                    long row = o + (k - k0) * outRowBytes;
                    if (wide) {
                        int at = k * TILE;
                        int t = 0;
                        for (; t + 2 <= n; t += 2) dest.set(I64, row + 4L * t, (tile[at + t] & 0xFFFF_FFFFL) | ((long) tile[at + t + 1] << 32));
                        for (; t < n; t++) dest.set(I32, row + 4L * t, tile[at + t]);
                    } else {
                        int at = (k >>> 1) * TILE;
                        int shift = (k & 1) << 4;
                        int t = 0;
                        for (; t + 4 <= n; t += 4) {
                            dest.set(I64, row + 2L * t, ((tile[at + t] >>> shift) & 0xFFFFL)
                                    | (((long) (tile[at + t + 1] >>> shift) & 0xFFFF) << 16)
                                    | (((long) (tile[at + t + 2] >>> shift) & 0xFFFF) << 32)
                                    | ((long) (tile[at + t + 3] >>> shift) << 48));
                        }
                        for (; t < n; t++) dest.set(I16, row + 2L * t, (short) (tile[at + t] >>> shift));
                    }
                }
            }
            i += k1 - k0;
        }
    }

    /** Source rows per tile of {@link #transposed}: 32 output rows x 64 values stay in L1. */
    static final int TILE = 64;
}
