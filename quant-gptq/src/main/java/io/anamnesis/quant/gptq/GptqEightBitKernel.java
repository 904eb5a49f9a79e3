package io.anamnesis.quant.gptq;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.LittleEndian;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * 8-bit GPTQ a packed word at a time: the four inputs of an int32 word share one group (every
 * checkpoint without act-order), so the word's scale and zero are read once, its four values
 * computed as {@link GptqKernel#dequantizeRowsScalar} computes them (the same float32
 * {@code scale * (q - zero)}) and narrowed straight into one 64-bit lane of the tile, four
 * BF16/F16 values or two F32 ones: no float tile, no group lookup per value, no second pass.
 * A table, as the 2- and 4-bit kernel has, would hold 256 codes for the 128 values of a group.
 *
 * <p>BF16 narrowing is round-to-nearest-even on the bits, without the NaN test of
 * {@link Floats#f32ToBf16(int)} when every scale of the tile is finite: a finite scale times
 * an integer in [-256, 256] is never NaN (it may be infinite, which the rounding keeps).
 * A tile with a NaN or infinite scale takes that test per value.
 *
 * <p>Measured (CpuTime, GptqBench, 4096 x 11008 to BF16, one thread): 0.24 Gelem/s for the
 * scalar kernel it replaces on this layout; docs/benchmarks.md has the figure after.
 */
final class GptqEightBitKernel {
    private GptqEightBitKernel() {
    }

    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);

    /** Where it applies: 8 bits and a group per word ({@link GptqKernel#wordGroups}). */
    static boolean applies(GptqKernel.Layout l, int[] wordGroup) {
        return l.bits() == 8 && wordGroup != null;
    }

    /** Output rows {@code [firstRow, firstRow + rowCount)} into {@code dest}, as {@link GptqKernel#dequantizeRowsScalar}. */
    static void dequantizeRows(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales, int[] wordGroup,
                               GptqKernel.Layout l, int firstRow, int rowCount, DType target, MemorySegment dest) {
        int code = GptqKernel.targetCode(target);
        int tileRows = GptqKernel.TILE_ROWS;
        int tileIn = GptqKernel.TILE_IN; // a multiple of 4: tiles start on word boundaries
        int groups = l.groups();
        int elementBytes = target.elementBytes();
        float[] scale = new float[groups * tileRows];
        int[] zero = new int[groups * tileRows];
        boolean wide = code == GptqKernel.TARGET_F32;
        int perLong = wide ? 2 : 4;
        int rowLongs = tileIn / perLong;
        long[] tile = new long[tileRows * rowLongs];
        int end = firstRow + rowCount;
        for (int o0 = firstRow; o0 < end; o0 += tileRows) {
            int rows = Math.min(tileRows, end - o0);
            GptqKernel.loadGroupParameters(qzeros, scales, l, o0, rows, tileRows, scale, zero);
            boolean finite = true;
            for (int g = 0; g < groups; g++) {
                for (int t = 0; t < rows; t++) finite &= Float.isFinite(scale[g * tileRows + t]);
            }
            for (int i0 = 0; i0 < l.in(); i0 += tileIn) {
                int cols = Math.min(tileIn, l.in() - i0);
                int r0 = i0 / 4;
                int r1 = (i0 + cols) / 4;
                if (code == GptqKernel.TARGET_BF16 && finite) {
                    toBf16(qweight, wordGroup, l.out(), o0, rows, r0, r1, scale, zero, tile);
                } else {
                    anyTarget(qweight, wordGroup, l.out(), o0, rows, r0, r1, scale, zero, code, tile);
                }
                int longs = cols / perLong;
                for (int t = 0; t < rows; t++) {
                    long at = ((long) (o0 - firstRow + t) * l.in() + i0) * elementBytes;
                    MemorySegment.copy(tile, t * rowLongs, dest, I64, at, longs);
                }
            }
        }
    }

    /** The common case, its own loop so that it compiles tight: finite scales to BF16, one long per word. */
    private static void toBf16(MemorySegment qweight, int[] wordGroup, int out, int o0, int rows, int r0, int r1,
                               float[] scale, int[] zero, long[] tile) {
        int rowLongs = GptqKernel.TILE_IN / 4;
        for (int r = r0; r < r1; r++) {
            long rowBase = ((long) r * out + o0) * 4;
            int gBase = wordGroup[r] * GptqKernel.TILE_ROWS;
            int at = r - r0;
            for (int t = 0; t < rows; t++, at += rowLongs) {
                int w = qweight.get(LittleEndian.I32, rowBase + 4L * t);
                float s = scale[gBase + t];
                int z = zero[gBase + t];
                tile[at] = bf16(s * (float) ((w & 0xFF) - z))
                        | bf16(s * (float) (((w >>> 8) & 0xFF) - z)) << 16
                        | bf16(s * (float) (((w >>> 16) & 0xFF) - z)) << 32
                        | bf16(s * (float) ((w >>> 24) - z)) << 48;
            }
        }
    }

    /** Round-to-nearest-even to BF16 of a value that is not NaN. */
    private static long bf16(float v) {
        int bits = Float.floatToRawIntBits(v);
        return ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16) & 0xFFFFL;
    }

    /** Every target, NaN-safe: the narrowing of {@link GptqKernel#store}. */
    private static void anyTarget(MemorySegment qweight, int[] wordGroup, int out, int o0, int rows, int r0, int r1,
                                  float[] scale, int[] zero, int code, long[] tile) {
        boolean wide = code == GptqKernel.TARGET_F32;
        int rowLongs = GptqKernel.TILE_IN / (wide ? 2 : 4);
        for (int r = r0; r < r1; r++) {
            long rowBase = ((long) r * out + o0) * 4;
            int gBase = wordGroup[r] * GptqKernel.TILE_ROWS;
            int slot = (r - r0) * (wide ? 2 : 1);
            for (int t = 0; t < rows; t++) {
                int w = qweight.get(LittleEndian.I32, rowBase + 4L * t);
                float s = scale[gBase + t];
                int z = zero[gBase + t];
                int at = t * rowLongs + slot;
                if (wide) {
                    for (int k = 0; k < 2; k++, w >>>= 16) {
                        tile[at + k] = (Float.floatToRawIntBits(s * (float) ((w & 0xFF) - z)) & 0xFFFF_FFFFL)
                                | (long) Float.floatToRawIntBits(s * (float) (((w >>> 8) & 0xFF) - z)) << 32;
                    }
                } else {
                    long four = 0;
                    for (int k = 0; k < 4; k++, w >>>= 8) {
                        float v = s * (float) ((w & 0xFF) - z);
                        short h = code == GptqKernel.TARGET_BF16 ? Floats.f32ToBf16(v) : Float.floatToFloat16(v);
                        four |= (h & 0xFFFFL) << (16 * k);
                    }
                    tile[at] = four;
                }
            }
        }
    }
}
