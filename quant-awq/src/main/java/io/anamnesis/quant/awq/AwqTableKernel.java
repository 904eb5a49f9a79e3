package io.anamnesis.quant.awq;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.LittleEndian;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * AWQ by lookup: a 4-bit value has 16 codes, so each (group, output row) first gets the
 * narrowed result of {@code (q - zero) * scale} for every code, computed exactly as
 * {@link AwqKernel#dequantizeRowsScalar} computes it (same float32 arithmetic, same
 * round-to-nearest-even), and the codes are then only looked up: bit-exact by construction,
 * fast from the first call, no vectorizing JIT needed.
 *
 * <p>The output is the transpose of the packed layout (a word holds 8 output rows of one
 * input), so the kernel reads the words of 4 consecutive inputs (2 for F32) and writes each
 * output row's 4 values as one long into a tile, which is then copied out row by row. It
 * applies when the group size and in_features are multiples of 4; otherwise the scalar
 * kernel runs.
 */
final class AwqTableKernel {
    private AwqTableKernel() {
    }

    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    static boolean applies(AwqKernel.Layout l) {
        return l.groupSize() % 4 == 0 && l.in() % 4 == 0 && l.out() % 8 == 0;
    }

    /** Output rows {@code [firstRow, firstRow + rowCount)} into {@code dest}, as {@link AwqKernel#dequantizeRowsScalar}. */
    static void dequantizeRows(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales,
                               AwqKernel.Layout l, int firstRow, int rowCount, DType target, MemorySegment dest) {
        int code = AwqKernel.targetCode(target);
        boolean wide = code == AwqKernel.TARGET_F32;
        int perLong = wide ? 2 : 4;
        int tileRows = AwqKernel.TILE_ROWS;
        int tileIn = AwqKernel.TILE_IN;
        int rowLongs = tileIn / perLong;
        int elementBytes = target.elementBytes();
        int groups = l.groups();
        float[] scale = new float[groups * tileRows];
        int[] zero = new int[groups * tileRows];
        int[] table = new int[groups * tileRows * 16];
        long[] tile = new long[tileRows * rowLongs];
        long rowBytes = (long) l.out() / 8 * 4;
        int gs = l.groupSize();
        int end = firstRow + rowCount;
        for (int w0 = firstRow & ~7; w0 < end; w0 += tileRows) {
            int tileEnd = Math.min(w0 + tileRows, l.out());
            int words = (tileEnd - w0) / 8;
            AwqKernel.loadGroupParameters(qzeros, scales, l, w0, tileEnd - w0, tileRows, scale, zero);
            fillTables(scale, zero, groups * tileRows, code, table);
            long wordOffset = (long) w0 / 8 * 4;
            for (int i0 = 0; i0 < l.in(); i0 += tileIn) {
                int cols = Math.min(tileIn, l.in() - i0);
                for (int i = i0; i < i0 + cols; i += perLong) {
                    int gBase = (i / gs) * tileRows; // the perLong inputs share a group: gs % 4 == 0
                    long rowBase = i * rowBytes + wordOffset;
                    int slot = (i - i0) / perLong;
                    for (int j = 0; j < words; j++) {
                        long at = rowBase + j * 4L;
                        if (wide) {
                            int a = qweight.get(LittleEndian.I32, at);
                            int b = qweight.get(LittleEndian.I32, at + rowBytes);
                            for (int k = 0; k < 8; k++, a >>>= 4, b >>>= 4) {
                                int t = 8 * j + AwqKernel.ORDER[k];
                                int base = (gBase + t) << 4;
                                tile[t * rowLongs + slot] = (table[base + (a & 15)] & 0xFFFF_FFFFL)
                                        | ((long) table[base + (b & 15)] << 32);
                            }
                        } else {
                            int a = qweight.get(LittleEndian.I32, at);
                            int b = qweight.get(LittleEndian.I32, at + rowBytes);
                            int c = qweight.get(LittleEndian.I32, at + 2 * rowBytes);
                            int d = qweight.get(LittleEndian.I32, at + 3 * rowBytes);
                            for (int k = 0; k < 8; k++, a >>>= 4, b >>>= 4, c >>>= 4, d >>>= 4) {
                                int t = 8 * j + AwqKernel.ORDER[k];
                                int base = (gBase + t) << 4;
                                tile[t * rowLongs + slot] = (table[base + (a & 15)] & 0xFFFFL)
                                        | ((long) (table[base + (b & 15)] & 0xFFFF) << 16)
                                        | ((long) (table[base + (c & 15)] & 0xFFFF) << 32)
                                        | ((long) table[base + (d & 15)] << 48);
                            }
                        }
                    }
                }
                int longs = cols / perLong;
                for (int o = Math.max(w0, firstRow); o < Math.min(tileEnd, end); o++) {
                    long at = ((long) (o - firstRow) * l.in() + i0) * elementBytes;
                    MemorySegment.copy(tile, (o - w0) * rowLongs, dest, I64, at, longs);
                }
            }
        }
    }

    /** {@code table[(g * rows + t) * 16 + q]}: the target's bits of {@code (q - zero) * scale}, the scalar kernel's expression. */
    private static void fillTables(float[] scale, int[] zero, int entries, int code, int[] table) {
        for (int e = 0; e < entries; e++) {
            float s = scale[e];
            int z = zero[e];
            for (int q = 0; q < 16; q++) {
                float v = (float) (q - z) * s;
                table[e * 16 + q] = switch (code) {
                    case AwqKernel.TARGET_F32 -> Float.floatToRawIntBits(v);
                    case AwqKernel.TARGET_BF16 -> Floats.f32ToBf16(v) & 0xFFFF;
                    default -> Float.floatToFloat16(v) & 0xFFFF;
                };
            }
        }
    }
}
