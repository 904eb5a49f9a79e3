package io.anamnesis.quant.gptq;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.LittleEndian;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * 2- and 4-bit GPTQ by lookup: a quantized value has only 4 or 16 codes, so each (group,
 * output row) first gets the narrowed result of {@code scale * (q - zero)} for every code,
 * computed exactly as {@link GptqKernel#dequantizeRowsScalar} computes it (same float32
 * multiply, same round-to-nearest-even), and the codes are then only looked up. Bit-exact by
 * construction, and fast from the first call: no multiply, narrowing or group lookup per
 * element, and no vectorizing JIT needed (what a short {@code amn} run gets).
 *
 * <p>With group size 128 a table of 16 serves 128 values. It applies when every int32 word's
 * inputs share one group (sequential groups whose size is a multiple of the values per word,
 * which is every checkpoint without act-order) and in_features fills whole words; otherwise
 * the scalar kernel runs.
 */
final class GptqTableKernel {
    private GptqTableKernel() {
    }

    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);

    /** Output rows {@code [firstRow, firstRow + rowCount)} into {@code dest}, as {@link GptqKernel#dequantizeRowsScalar}. */
    static void dequantizeRows(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales, int[] wordGroup,
                               GptqKernel.Layout l, int firstRow, int rowCount, DType target, MemorySegment dest) {
        int code = GptqKernel.targetCode(target);
        int bits = l.bits();
        int codes = 1 << bits;
        int perWord = 32 / bits;
        int groups = l.groups();
        int tileRows = GptqKernel.TILE_ROWS;
        int tileIn = GptqKernel.TILE_IN; // a multiple of 16: tiles start on word boundaries
        int elementBytes = target.elementBytes();
        float[] scale = new float[groups * tileRows];
        int[] zero = new int[groups * tileRows];
        boolean wide = code == GptqKernel.TARGET_F32;
        int[] table = new int[groups * tileRows * codes];
        // a tile row's values, four 16-bit or two 32-bit values per long
        int perLong = wide ? 2 : 4;
        long[] tile = new long[tileRows * tileIn / perLong];
        int end = firstRow + rowCount;
        for (int o0 = firstRow; o0 < end; o0 += tileRows) {
            int rows = Math.min(tileRows, end - o0);
            GptqKernel.loadGroupParameters(qzeros, scales, l, o0, rows, tileRows, scale, zero);
            fillTables(scale, zero, groups * tileRows, codes, code, table);
            for (int i0 = 0; i0 < l.in(); i0 += tileIn) {
                int cols = Math.min(tileIn, l.in() - i0);
                int r0 = i0 / perWord;
                int r1 = (i0 + cols) / perWord;
                if (bits == 4 && !wide) {
                    fourBitNarrow(qweight, wordGroup, l.out(), o0, rows, r0, r1, table, tile);
                } else for (int r = r0; r < r1; r++) {
                    long rowBase = ((long) r * l.out() + o0) * 4;
                    int gBase = wordGroup[r] * tileRows;
                    int slot = (r - r0) * perWord / perLong; // first long of this word in a tile row
                    for (int t = 0; t < rows; t++) {
                        int w = qweight.get(LittleEndian.I32, rowBase + 4L * t);
                        int b = (gBase + t) * codes;
                        int at = t * (tileIn / perLong) + slot;
                        if (bits == 4) {
                            if (wide) {
                                for (int k = 0; k < 4; k++, w >>>= 8) {
                                    tile[at + k] = (table[b + (w & 15)] & 0xFFFF_FFFFL) | ((long) table[b + ((w >>> 4) & 15)] << 32);
                                }
                            } else {
                                tile[at] = four(table, b, w, 4, 15);
                                tile[at + 1] = four(table, b, w >>> 16, 4, 15);
                            }
                        } else if (wide) {
                            for (int k = 0; k < 8; k++, w >>>= 4) {
                                tile[at + k] = (table[b + (w & 3)] & 0xFFFF_FFFFL) | ((long) table[b + ((w >>> 2) & 3)] << 32);
                            }
                        } else {
                            for (int k = 0; k < 4; k++, w >>>= 8) tile[at + k] = four(table, b, w, 2, 3);
                        }
                    }
                }
                int longs = cols / perLong;
                for (int t = 0; t < rows; t++) {
                    long at = ((long) (o0 - firstRow + t) * l.in() + i0) * elementBytes;
                    MemorySegment.copy(tile, t * (tileIn / perLong), dest, I64, at, longs);
                }
            }
        }
    }

    /** The common case, its own loop so that it compiles tight: 4 bits to BF16/F16, 8 values (two longs) per word. */
    private static void fourBitNarrow(MemorySegment qweight, int[] wordGroup, int out, int o0, int rows, int r0, int r1,
                                      int[] table, long[] tile) {
        int rowLongs = GptqKernel.TILE_IN / 4;
        for (int r = r0; r < r1; r++) {
            long rowBase = ((long) r * out + o0) * 4;
            int gBase = wordGroup[r] * GptqKernel.TILE_ROWS;
            int at = (r - r0) * 2;
            for (int t = 0; t < rows; t++, at += rowLongs) {
                int w = qweight.get(LittleEndian.I32, rowBase + 4L * t);
                int b = (gBase + t) << 4;
                tile[at] = (table[b + (w & 15)] & 0xFFFFL)
                        | ((long) (table[b + ((w >>> 4) & 15)] & 0xFFFF) << 16)
                        | ((long) (table[b + ((w >>> 8) & 15)] & 0xFFFF) << 32)
                        | ((long) table[b + ((w >>> 12) & 15)] << 48);
                tile[at + 1] = (table[b + ((w >>> 16) & 15)] & 0xFFFFL)
                        | ((long) (table[b + ((w >>> 20) & 15)] & 0xFFFF) << 16)
                        | ((long) (table[b + ((w >>> 24) & 15)] & 0xFFFF) << 32)
                        | ((long) table[b + (w >>> 28)] << 48);
            }
        }
    }

    /** Four 16-bit values from the four fields of {@code bits} bits at the bottom of {@code w}. */
    private static long four(int[] table, int b, int w, int bits, int mask) {
        return (table[b + (w & mask)] & 0xFFFFL)
                | ((long) (table[b + ((w >>> bits) & mask)] & 0xFFFF) << 16)
                | ((long) (table[b + ((w >>> 2 * bits) & mask)] & 0xFFFF) << 32)
                | ((long) table[b + ((w >>> 3 * bits) & mask)] << 48);
    }

    /** {@code table[(g * rows + t) * codes + q]}: the target's bits of {@code scale * (q - zero)}, the scalar kernel's expression. */
    private static void fillTables(float[] scale, int[] zero, int entries, int codes, int code, int[] table) {
        for (int e = 0; e < entries; e++) {
            float s = scale[e];
            int z = zero[e];
            int at = e * codes;
            for (int q = 0; q < codes; q++) {
                float v = s * (float) (q - z);
                table[at + q] = switch (code) {
                    case GptqKernel.TARGET_F32 -> Float.floatToRawIntBits(v);
                    case GptqKernel.TARGET_BF16 -> Floats.f32ToBf16(v) & 0xFFFF;
                    default -> Float.floatToFloat16(v) & 0xFFFF;
                };
            }
        }
    }
}
