package io.anamnesis.quant.mxfp4;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The Vector API form of {@link Mxfp4Kernels#transposed}, byte for byte the same: both read
 * the same per-scale table of the target's 16 values, and a lane only selects an entry.
 * Needs 512-bit vectors; loaded only when {@code jdk.incubator.vector} is resolved.
 *
 * <p>The output row {@code (e, 32 g + k)} is value k of the blocks {@code (e, r, g)} for every
 * source row r. The kernel works one block column {@code (e, g)} at a time, down the source
 * rows in tiles of {@link #ROWS16} rows (16-bit targets: one 512-bit vector of an output row)
 * or {@link #ROWS32} (F32): each row's block is decoded into its 32 values by one lookup (its
 * scale's 16 entries in a vector, the nibbles as lane indices: {@code selectFrom}, a
 * {@code vpermw} or {@code vpermd}), the tile is transposed in registers (see
 * {@link #decodeLowStages16}) and each output row's piece is stored as a whole vector. So the 32
 * output rows of a block column are each written front to back.
 *
 * <p>Where the time went on the 45 M-value benchmark, measured: the decoding and the
 * transposes are about half; the rest is memory. Reading the blocks a column at a time was
 * slow (see {@link #BAND}); writing the rows of more than one column at a time was too (128
 * rows at once took 2.5x as long as 32); and the output stores are best spread among the
 * arithmetic: the tiles staged in an array and copied out in bulk, a few KB per row, took a
 * third longer, although the bulk copy is cheaper per byte than the bounds and owner checks
 * of each vector store, because the copies' bursts of write misses stalled the core while the
 * spread stores drain as the work goes on.
 */
final class Mxfp4VectorKernels {
    private Mxfp4VectorKernels() {
    }

    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_128;
    private static final VectorSpecies<Byte> B512 = ByteVector.SPECIES_512;
    private static final VectorSpecies<Short> S = ShortVector.SPECIES_512;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_512;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    /** Source rows per tile: one output vector's lanes, for 16-bit and for F32 targets. */
    static final int ROWS16 = 32;
    static final int ROWS32 = 16;

    /** The transposes and the 16-entry table rows need 512-bit vectors. */
    static boolean supported() {
        return IntVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
    }

    /**
     * The 16-bit table ({@link Mxfp4Kernels#table} narrowed to shorts) with 16 entries of
     * padding: a table row is read as a whole 32-lane vector, of which the lookups (indices
     * 0..15) use the first half, so the last scale's read must stay inside the array.
     */
    static short[] narrow(int[] table) {
        short[] t = new short[table.length + 16];
        for (int i = 0; i < table.length; i++) t[i] = (short) table[i];
        return t;
    }

    // Two-source select indices for the transposes, on int lanes: lane l of ILO{b} takes row i's
    // lane l when bit b of l is clear, else row (i + b)'s lane l - b; IHI{b} takes row i's lane
    // l + b when the bit is clear, else row (i + b)'s lane l. Indices past 15 name the second row.
    private static final IntVector ILO8 = index(8, false);
    private static final IntVector IHI8 = index(8, true);
    private static final IntVector ILO4 = index(4, false);
    private static final IntVector IHI4 = index(4, true);
    private static final IntVector ILO2 = index(2, false);
    private static final IntVector IHI2 = index(2, true);
    private static final IntVector ILO1 = index(1, false);
    private static final IntVector IHI1 = index(1, true);

    private static IntVector index(int b, boolean hi) {
        int n = I.length();
        int[] s = new int[n];
        for (int l = 0; l < n; l++) {
            boolean set = (l & b) != 0;
            s[l] = hi ? (set ? n + l : l + b) : (set ? n + l - b : l);
        }
        return IntVector.fromArray(I, s, 0);
    }

    /** F32: the byte, and the shift, of the nibble of each of a block's values 0..15 (16..31: 8 bytes on). */
    private static final IntVector LOW_BYTES = IntVector.fromArray(I, new int[]{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7}, 0);
    private static final IntVector HIGH_BYTES = LOW_BYTES.add(8);
    private static final IntVector NIBBLE_SHIFT = IntVector.fromArray(I, new int[]{0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4}, 0);

    /**
     * Block columns gathered per pass down the rows: 256 bytes of each block row. The blocks of
     * one column are 16 bytes in every 2,048 (gpt-oss's 128 groups a row); read a column at a
     * time, each 64-byte line was read four times over, and the L2 does not keep the lines
     * between passes (at that stride its sets fill at 1,024 lines): the reads alone took longer
     * than the scalar kernel. So the first column's pass copies the band's blocks, row by row,
     * into a small buffer, and the other columns are decoded from there. Copying 256 bytes a row
     * took a quarter of the time of 64 (4 KB pages: a page walk for every two block rows,
     * however much of them is read).
     */
    static final int BAND = 16;
    /** Most source rows per pass down a band (a 512 KB band buffer, in L2). */
    static final int SPAN = 2048;
    /** Source rows decoded at a time: 16 KB of values, in L1. */
    static final int CHUNK16 = 256;
    static final int CHUNK32 = 128;

    /**
     * Output rows {@code [firstRow, firstRow + rowCount)} of the transposed layout, as
     * {@link Mxfp4Kernels#transposed} writes them.
     *
     * @param table {@link Mxfp4Kernels#table} (F32) or {@link #narrow} of it (16-bit targets)
     */
    static void transposed(MemorySegment blocks, MemorySegment scales, int rows, int groups, Object table, boolean wide,
                           long firstRow, long rowCount, MemorySegment dest) {
        long cols = 32L * groups;
        int width = wide ? 4 : 2;
        long rowBytes = (long) rows * width;
        int tileRows = wide ? ROWS32 : ROWS16;
        int chunk = wide ? CHUNK32 : CHUNK16;
        // rows per pass: equal passes of at most SPAN rows, a whole number of tiles
        int passes = (rows + SPAN - 1) / SPAN;
        int span = ((rows + passes - 1) / passes + tileRows - 1) / tileRows * tileRows;
        // a chunk of output rows reaches ceil((rowCount - 1) / 32) + 1 block columns at most
        int band = (int) Math.min(BAND, (rowCount + 2 * Mxfp4Kernels.BLOCK - 2) / Mxfp4Kernels.BLOCK);
        // BAND blocks a row whatever the band's width: a constant stride lets C2 drop the decoding
        // loop's bounds checks
        byte[] bandBlocks = new byte[span * BAND * Mxfp4Kernels.BLOCK_BYTES];
        byte[] bandScales = new byte[span * BAND];
        // a chunk's decoded values, 16-bit ones as pairs in ints (see decodeLowStages16)
        int[] tile = new int[chunk * (wide ? 32 : 16)];
        long end = firstRow + rowCount;
        long i = firstRow;
        while (i < end) {
            long e = i / cols;
            int c = (int) (i % cols);
            // this expert's output rows in the chunk: [c, cEnd); a band of its block columns [g0, g0 + nb)
            int cEnd = (int) Math.min(cols, c + (end - i));
            int g0 = c / Mxfp4Kernels.BLOCK;
            int nb = Math.min(band, (cEnd + Mxfp4Kernels.BLOCK - 1) / Mxfp4Kernels.BLOCK - g0);
            int bandEnd = Math.min(cEnd, (g0 + nb) * Mxfp4Kernels.BLOCK);
            // where output row 32 g0 of the expert would start in dest (rows before c are not written)
            long base = (i - firstRow - (c - g0 * Mxfp4Kernels.BLOCK)) * rowBytes;
            long block0 = e * rows * groups + g0;
            for (int s0 = 0; s0 < rows; s0 += span) {
                int n = Math.min(span, rows - s0);
                for (int b = 0; b < nb; b++) {
                    // block column g0 + b holds output rows 32 (g0 + b) + k; the chunk has k in [k0, k1)
                    int k0 = Math.max(0, c - (g0 + b) * Mxfp4Kernels.BLOCK);
                    int k1 = Math.min(Mxfp4Kernels.BLOCK, bandEnd - (g0 + b) * Mxfp4Kernels.BLOCK);
                    long at = base + (long) b * Mxfp4Kernels.BLOCK * rowBytes + (long) s0 * width;
                    for (int r0 = 0; r0 < n; r0 += chunk) {
                        int rn = Math.min(chunk, n - r0);
                        if (b == 0) {
                            gather(blocks, scales, block0 + (long) (s0 + r0) * groups, groups, rn, nb, r0, bandBlocks,
                                    bandScales);
                        }
                        // a ragged last tile decodes whatever the band buffers hold past row n (any
                        // bytes are codes and scales); the stores leave those lanes out
                        int m = (rn + tileRows - 1) / tileRows * tileRows;
                        long out = at + (long) r0 * width;
                        if (wide) {
                            decode32(bandBlocks, bandScales, r0 * BAND + b, m, (int[]) table, tile);
                            lowStages32(tile, m);
                            highStages32(tile, m, rn, dest, out, rowBytes, k0, k1);
                        } else {
                            decodeLowStages16(bandBlocks, bandScales, r0 * BAND + b, m, (short[]) table, tile);
                            highStages16(tile, m, rn, dest, out, rowBytes, k0, k1);
                        }
                    }
                }
            }
            i += bandEnd - c;
        }
    }

    /**
     * Blocks {@code first + r groups + b} ({@code r < n, b < nb}) and their scales to
     * {@code (row0 + r) BAND + b} of the band buffers: 64- and 16-byte vectors (a bulk copy per
     * row cost more than all the decoding).
     */
    private static void gather(MemorySegment blocks, MemorySegment scales, long first, int groups, int n, int nb,
                               int row0, byte[] bandBlocks, byte[] bandScales) {
        int whole = nb & ~3;
        for (int r = 0; r < n; r++) {
            long block = first + (long) r * groups;
            int to = (row0 + r) * BAND;
            int b = 0;
            for (; b < whole; b += 4) {
                ByteVector.fromMemorySegment(B512, blocks, (block + b) * Mxfp4Kernels.BLOCK_BYTES, LE)
                        .intoArray(bandBlocks, (to + b) * Mxfp4Kernels.BLOCK_BYTES);
            }
            for (; b < nb; b++) {
                ByteVector.fromMemorySegment(B, blocks, (block + b) * Mxfp4Kernels.BLOCK_BYTES, LE)
                        .intoArray(bandBlocks, (to + b) * Mxfp4Kernels.BLOCK_BYTES);
            }
            if (nb == BAND) {
                ByteVector.fromMemorySegment(B, scales, block, LE).intoArray(bandScales, to);
            } else {
                for (b = 0; b < nb; b++) bandScales[to + b] = scales.get(ValueLayout.JAVA_BYTE, block + b);
            }
        }
    }

    // Decoding with the low transpose stages (F32: decoding, then those stages) and the high
    // stages are loops over a chunk of rows, each with its whole body inline: as one loop over
    // tiles calling a method per step, C2 kept the loop's values on the stack around the calls
    // and the decoding took twice the instructions. The band buffers are plain arrays for the
    // same reason: decoding from memory segments re-checked each segment's kind and bounds at
    // every block.

    /**
     * F32: the 32 values of each of the band buffers' blocks {@code first + t BAND} ({@code t < m})
     * as two int vectors (values 0..15 and 16..31) into {@code tile[32 t ..]}.
     */
    private static void decode32(byte[] blocks, byte[] scales, int first, int m, int[] table, int[] tile) {
        for (int t = 0; t < m; t++) {
            int block = first + t * BAND;
            IntVector values = IntVector.fromArray(I, table, (scales[block] & 0xFF) << 4);
            IntVector x = (IntVector) ByteVector.fromArray(B, blocks, block * Mxfp4Kernels.BLOCK_BYTES)
                    .convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
            IntVector low = LOW_BYTES.selectFrom(x).lanewise(VectorOperators.LSHR, NIBBLE_SHIFT).and(15);
            IntVector high = HIGH_BYTES.selectFrom(x).lanewise(VectorOperators.LSHR, NIBBLE_SHIFT).and(15);
            low.selectFrom(values).intoArray(tile, t * Mxfp4Kernels.BLOCK);
            high.selectFrom(values).intoArray(tile, t * Mxfp4Kernels.BLOCK + 16);
        }
    }

    // The transposes. Stage b (a two-source select pair on rows i and i + b) swaps bit b of an
    // element's row with bit b of its lane; stages on different bits commute, so they are done
    // in two loops of a few rows at a time: the low bits within 8 (F32: 4) neighbouring rows,
    // back into the tile; then the high bits, whose results are the output row pieces. One
    // method holding a whole 32-row tile in registers was too large for C1 ("out of virtual
    // registers"), and a method that C1 gives up on is never handed to C2 either: it ran boxed,
    // 4x slower than the scalar kernel.
    //
    // 16-bit values are moved as pairs in int lanes wherever a stage keeps pairs together (every
    // stage but b = 1): a two-source select of ints is one micro-op, one of shorts several, and
    // took twice as long. Stage 1 is shifts and masks on the int pairs.

    /**
     * The 32 values of each of the band buffers' blocks {@code first + t BAND} ({@code t < m}),
     * 8 rows at a time, through stages 4, 2 and 1, into {@code tile[16 t ..]}, two values to an
     * int (a row's value 2j in the low half of its int j). Decoding straight into the stages
     * saves a store and a load of each row through the tile: a little faster in the in-cache
     * runs and in most benchmark pairs, though within this machine's noise.
     */
    private static void decodeLowStages16(byte[] blocks, byte[] scales, int first, int m, short[] table, int[] tile) {
        for (int at = 0; at < m * 16; at += 8 * 16) {
            int block = first + (at >> 4) * BAND;
            // per row: the scale's table row; int lane j holds byte j (values 2j, low nibble, and
            // 2j + 1); as shorts, lane 2j keeps the byte with its low nibble copied to bits 12..15
            // and lane 2j + 1 gets the high nibble: masked to 4 bits, each lane's code in storage order.
            // Written out eight times on purpose: the same lines in a small helper method measured
            // 24-33 ms against 18-22 for this benchmark (Mxfp4Bench, alternating jars).
            ShortVector s0 = ShortVector.fromArray(S, table, (scales[block] & 0xFF) << 4);
            IntVector x0 = (IntVector) ByteVector.fromArray(B, blocks, block * Mxfp4Kernels.BLOCK_BYTES)
                    .convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
            IntVector v0 = x0.or(x0.lanewise(VectorOperators.LSHL, 12)).reinterpretAsShorts().and((short) 15)
                    .selectFrom(s0).reinterpretAsInts();
            ShortVector s1 = ShortVector.fromArray(S, table, (scales[block + 1 * BAND] & 0xFF) << 4);
            IntVector x1 = (IntVector) ByteVector.fromArray(B, blocks, (block + 1 * BAND) * Mxfp4Kernels.BLOCK_BYTES)
                    .convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
            IntVector v1 = x1.or(x1.lanewise(VectorOperators.LSHL, 12)).reinterpretAsShorts().and((short) 15)
                    .selectFrom(s1).reinterpretAsInts();
            ShortVector s2 = ShortVector.fromArray(S, table, (scales[block + 2 * BAND] & 0xFF) << 4);
            IntVector x2 = (IntVector) ByteVector.fromArray(B, blocks, (block + 2 * BAND) * Mxfp4Kernels.BLOCK_BYTES)
                    .convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
            IntVector v2 = x2.or(x2.lanewise(VectorOperators.LSHL, 12)).reinterpretAsShorts().and((short) 15)
                    .selectFrom(s2).reinterpretAsInts();
            ShortVector s3 = ShortVector.fromArray(S, table, (scales[block + 3 * BAND] & 0xFF) << 4);
            IntVector x3 = (IntVector) ByteVector.fromArray(B, blocks, (block + 3 * BAND) * Mxfp4Kernels.BLOCK_BYTES)
                    .convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
            IntVector v3 = x3.or(x3.lanewise(VectorOperators.LSHL, 12)).reinterpretAsShorts().and((short) 15)
                    .selectFrom(s3).reinterpretAsInts();
            ShortVector s4 = ShortVector.fromArray(S, table, (scales[block + 4 * BAND] & 0xFF) << 4);
            IntVector x4 = (IntVector) ByteVector.fromArray(B, blocks, (block + 4 * BAND) * Mxfp4Kernels.BLOCK_BYTES)
                    .convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
            IntVector v4 = x4.or(x4.lanewise(VectorOperators.LSHL, 12)).reinterpretAsShorts().and((short) 15)
                    .selectFrom(s4).reinterpretAsInts();
            ShortVector s5 = ShortVector.fromArray(S, table, (scales[block + 5 * BAND] & 0xFF) << 4);
            IntVector x5 = (IntVector) ByteVector.fromArray(B, blocks, (block + 5 * BAND) * Mxfp4Kernels.BLOCK_BYTES)
                    .convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
            IntVector v5 = x5.or(x5.lanewise(VectorOperators.LSHL, 12)).reinterpretAsShorts().and((short) 15)
                    .selectFrom(s5).reinterpretAsInts();
            ShortVector s6 = ShortVector.fromArray(S, table, (scales[block + 6 * BAND] & 0xFF) << 4);
            IntVector x6 = (IntVector) ByteVector.fromArray(B, blocks, (block + 6 * BAND) * Mxfp4Kernels.BLOCK_BYTES)
                    .convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
            IntVector v6 = x6.or(x6.lanewise(VectorOperators.LSHL, 12)).reinterpretAsShorts().and((short) 15)
                    .selectFrom(s6).reinterpretAsInts();
            ShortVector s7 = ShortVector.fromArray(S, table, (scales[block + 7 * BAND] & 0xFF) << 4);
            IntVector x7 = (IntVector) ByteVector.fromArray(B, blocks, (block + 7 * BAND) * Mxfp4Kernels.BLOCK_BYTES)
                    .convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
            IntVector v7 = x7.or(x7.lanewise(VectorOperators.LSHL, 12)).reinterpretAsShorts().and((short) 15)
                    .selectFrom(s7).reinterpretAsInts();
            IntVector t;
            // stage 4: 2 int lanes
            t = ILO2.selectFrom(v0, v4); v4 = IHI2.selectFrom(v0, v4); v0 = t;
            t = ILO2.selectFrom(v1, v5); v5 = IHI2.selectFrom(v1, v5); v1 = t;
            t = ILO2.selectFrom(v2, v6); v6 = IHI2.selectFrom(v2, v6); v2 = t;
            t = ILO2.selectFrom(v3, v7); v7 = IHI2.selectFrom(v3, v7); v3 = t;
            // stage 2: 1 int lane
            t = ILO1.selectFrom(v0, v2); v2 = IHI1.selectFrom(v0, v2); v0 = t;
            t = ILO1.selectFrom(v1, v3); v3 = IHI1.selectFrom(v1, v3); v1 = t;
            t = ILO1.selectFrom(v4, v6); v6 = IHI1.selectFrom(v4, v6); v4 = t;
            t = ILO1.selectFrom(v5, v7); v7 = IHI1.selectFrom(v5, v7); v5 = t;
            // stage 1: row i keeps its even shorts and takes row i + 1's even ones as its odd ones;
            // row i + 1 keeps its odd shorts and takes row i's odd ones as its even ones
            t = v0.and(0xFFFF).or(v1.lanewise(VectorOperators.LSHL, 16));
            v1 = v0.lanewise(VectorOperators.LSHR, 16).or(v1.and(0xFFFF_0000));
            v0 = t;
            t = v2.and(0xFFFF).or(v3.lanewise(VectorOperators.LSHL, 16));
            v3 = v2.lanewise(VectorOperators.LSHR, 16).or(v3.and(0xFFFF_0000));
            v2 = t;
            t = v4.and(0xFFFF).or(v5.lanewise(VectorOperators.LSHL, 16));
            v5 = v4.lanewise(VectorOperators.LSHR, 16).or(v5.and(0xFFFF_0000));
            v4 = t;
            t = v6.and(0xFFFF).or(v7.lanewise(VectorOperators.LSHL, 16));
            v7 = v6.lanewise(VectorOperators.LSHR, 16).or(v7.and(0xFFFF_0000));
            v6 = t;
            v0.intoArray(tile, at);
            v1.intoArray(tile, at + 16);
            v2.intoArray(tile, at + 32);
            v3.intoArray(tile, at + 48);
            v4.intoArray(tile, at + 64);
            v5.intoArray(tile, at + 80);
            v6.intoArray(tile, at + 96);
            v7.intoArray(tile, at + 112);
        }
    }

    /**
     * Stages 8 and 16 on rows {@code i, i + 8, i + 16, i + 24} ({@code i < 8}) of each 32-row
     * tile {@code tt} of the {@code m} rows, whose lanes are then source rows {@code tt ..}: the
     * pieces of output rows {@code i, i + 8, i + 16, i + 24}, stored at {@code base + k rowBytes
     * + 2 tt} for the rows {@code k0 <= k < k1} of the chunk and the lanes below {@code rn}.
     */
    private static void highStages16(int[] tile, int m, int rn, MemorySegment dest, long base, long rowBytes, int k0,
                                     int k1) {
        for (int tt = 0; tt < m; tt += ROWS16) {
            VectorMask<Short> lanes = tt + ROWS16 <= rn ? null : S.indexInRange(0, rn - tt);
            long out = base + 2L * tt;
            for (int i = 0; i < 8; i++) {
                int at = (tt + i) * 16;
                IntVector v0 = IntVector.fromArray(I, tile, at);
                IntVector v1 = IntVector.fromArray(I, tile, at + 8 * 16);
                IntVector v2 = IntVector.fromArray(I, tile, at + 16 * 16);
                IntVector v3 = IntVector.fromArray(I, tile, at + 24 * 16);
                IntVector t;
                t = ILO4.selectFrom(v0, v1); v1 = IHI4.selectFrom(v0, v1); v0 = t;
                t = ILO4.selectFrom(v2, v3); v3 = IHI4.selectFrom(v2, v3); v2 = t;
                t = ILO8.selectFrom(v0, v2); v2 = IHI8.selectFrom(v0, v2); v0 = t;
                t = ILO8.selectFrom(v1, v3); v3 = IHI8.selectFrom(v1, v3); v1 = t;
                put(v0.reinterpretAsShorts(), i, dest, out, rowBytes, k0, k1, lanes);
                put(v1.reinterpretAsShorts(), i + 8, dest, out, rowBytes, k0, k1, lanes);
                put(v2.reinterpretAsShorts(), i + 16, dest, out, rowBytes, k0, k1, lanes);
                put(v3.reinterpretAsShorts(), i + 24, dest, out, rowBytes, k0, k1, lanes);
            }
        }
    }

    /** F32: stages 2 and 1 on each 4 rows of the {@code m} tile rows (32 ints each), both halves, in place. */
    private static void lowStages32(int[] tile, int m) {
        for (int g = 0; g < m / 2; g++) {
            // rows 4q .. 4q + 3 (q = g / 2), half g % 2 (values 0..15 or 16..31)
            int at = (g >> 1) * 4 * Mxfp4Kernels.BLOCK + (g & 1) * 16;
            IntVector v0 = IntVector.fromArray(I, tile, at);
            IntVector v1 = IntVector.fromArray(I, tile, at + 32);
            IntVector v2 = IntVector.fromArray(I, tile, at + 64);
            IntVector v3 = IntVector.fromArray(I, tile, at + 96);
            IntVector t;
            t = ILO2.selectFrom(v0, v2); v2 = IHI2.selectFrom(v0, v2); v0 = t;
            t = ILO2.selectFrom(v1, v3); v3 = IHI2.selectFrom(v1, v3); v1 = t;
            t = ILO1.selectFrom(v0, v1); v1 = IHI1.selectFrom(v0, v1); v0 = t;
            t = ILO1.selectFrom(v2, v3); v3 = IHI1.selectFrom(v2, v3); v2 = t;
            v0.intoArray(tile, at);
            v1.intoArray(tile, at + 32);
            v2.intoArray(tile, at + 64);
            v3.intoArray(tile, at + 96);
        }
    }

    /**
     * F32: stages 4 and 8 on rows {@code i, i + 4, i + 8, i + 12} ({@code i < 4}) of each
     * 16-row tile, half h (values {@code h .. h + 15}): output rows {@code h + i, h + i + 4, ...},
     * stored as {@link #highStages16} does.
     */
    private static void highStages32(int[] tile, int m, int rn, MemorySegment dest, long base, long rowBytes, int k0,
                                     int k1) {
        for (int tt = 0; tt < m; tt += ROWS32) {
            VectorMask<Integer> lanes = tt + ROWS32 <= rn ? null : I.indexInRange(0, rn - tt);
            long out = base + 4L * tt;
            for (int j = 0; j < 8; j++) {
                int i = j & 3;
                int h = (j & 4) * 4;
                int at = (tt + i) * Mxfp4Kernels.BLOCK + h;
                IntVector v0 = IntVector.fromArray(I, tile, at);
                IntVector v1 = IntVector.fromArray(I, tile, at + 4 * 32);
                IntVector v2 = IntVector.fromArray(I, tile, at + 8 * 32);
                IntVector v3 = IntVector.fromArray(I, tile, at + 12 * 32);
                IntVector t;
                t = ILO4.selectFrom(v0, v1); v1 = IHI4.selectFrom(v0, v1); v0 = t;
                t = ILO4.selectFrom(v2, v3); v3 = IHI4.selectFrom(v2, v3); v2 = t;
                t = ILO8.selectFrom(v0, v2); v2 = IHI8.selectFrom(v0, v2); v0 = t;
                t = ILO8.selectFrom(v1, v3); v3 = IHI8.selectFrom(v1, v3); v1 = t;
                put(v0, h + i, dest, out, rowBytes, k0, k1, lanes);
                put(v1, h + i + 4, dest, out, rowBytes, k0, k1, lanes);
                put(v2, h + i + 8, dest, out, rowBytes, k0, k1, lanes);
                put(v3, h + i + 12, dest, out, rowBytes, k0, k1, lanes);
            }
        }
    }

    // Stores output row k's piece if the chunk has that row; lanes null: all of it. One method per
    // vector class, so that each store's call site sees a single class.

    private static void put(ShortVector v, int k, MemorySegment dest, long base, long rowBytes, int k0, int k1,
                            VectorMask<Short> lanes) {
        if (k < k0 || k >= k1) return;
        if (lanes == null) v.intoMemorySegment(dest, base + k * rowBytes, LE);
        else v.intoMemorySegment(dest, base + k * rowBytes, LE, lanes);
    }

    private static void put(IntVector v, int k, MemorySegment dest, long base, long rowBytes, int k0, int k1,
                            VectorMask<Integer> lanes) {
        if (k < k0 || k >= k1) return;
        if (lanes == null) v.intoMemorySegment(dest, base + k * rowBytes, LE);
        else v.intoMemorySegment(dest, base + k * rowBytes, LE, lanes);
    }
}
