package io.anamnesis.quant.bnb;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.LittleEndian;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The bitsandbytes 4-bit kernels (NF4 and FP4, plain or double-quantized) as pure static
 * functions over memory segments: packed codes and per-block absmax in, BF16/F16/F32 out.
 *
 * <p>Layout, as {@code bitsandbytes.functional.quantize_4bit} writes it: element {@code 2k}
 * is the HIGH nibble of byte {@code k}, element {@code 2k+1} the low nibble; an odd element
 * count leaves the last low nibble unused ({@code (n + 1) / 2} bytes). Block {@code b}
 * covers elements {@code [b * blocksize, (b + 1) * blocksize)}, the last block may be short.
 *
 * <p>Arithmetic, in the reference's order: {@code out[e] = value[code(e)] * absmax[e / blocksize]},
 * one float32 multiply. Because a block has one absmax, the 16 possible results of a block
 * are computed (and narrowed) once per block and then only looked up; that gives the same
 * bits as multiplying element by element.
 */
public final class FourBit {
    private FourBit() {
    }

    /** Where the float32 absmax of a block comes from. */
    public sealed interface Absmax permits PlainAbsmax, NestedAbsmax {
        /** The absmax of block {@code block}, as the reference's float32 tensor holds it. */
        float at(long block);

        /** The absmax of blocks {@code [firstBlock, firstBlock + count)} into {@code out[0, count)}. */
        default void fill(long firstBlock, float[] out, int count) {
            for (int i = 0; i < count; i++) out[i] = at(firstBlock + i);
        }
    }

    /** Blocks whose absmax a kernel works out ahead, in one pass, before using them. */
    static final int ABSMAX_BATCH = 256;

    /** A buffer for the absmax of up to {@link #ABSMAX_BATCH} blocks of the chunk ending before {@code end}. */
    static float[] absmaxBuffer(long firstBlock, long end, long blocksize) {
        long lastBlock = (end - 1) / blocksize;
        return new float[(int) Math.min(ABSMAX_BATCH, lastBlock - firstBlock + 1)];
    }

    /** Plain 4-bit: {@code absmax} is a float32 tensor, one value per block. */
    public record PlainAbsmax(MemorySegment f32) implements Absmax {
        @Override
        public float at(long block) {
            return f32.get(LittleEndian.F32, block * 4);
        }
    }

    /**
     * Double quantization: {@code absmax} is itself 8-bit block-wise quantized.
     * {@code dequantize_4bit} first runs {@code dequantize_blockwise} (code lookup times the
     * nested absmax, one float32 multiply) and then adds the offset as a separate float32
     * tensor op. Java never fuses {@code a * b + c} into an FMA, which keeps the two roundings.
     */
    public static final class NestedAbsmax implements Absmax {
        private final MemorySegment codes;
        private final MemorySegment nestedAbsmax;
        private final float[] nestedMap;
        private final long nestedBlocksize;
        private final float offset;

        /**
         * @param codes           U8 absmax codes, one per 4-bit block
         * @param nestedAbsmax    F32, one per {@code nestedBlocksize} codes
         * @param nestedMap       the 256-entry code book ({@code nested_quant_map})
         * @param nestedBlocksize codes per nested block
         * @param offset          {@code nested_offset} of the quant state
         */
        public NestedAbsmax(MemorySegment codes, MemorySegment nestedAbsmax, float[] nestedMap,
                            long nestedBlocksize, float offset) {
            if (nestedMap.length != 256) throw new IllegalArgumentException("nested code book needs 256 entries");
            if (nestedBlocksize < 1) throw new IllegalArgumentException("nested blocksize must be positive");
            this.codes = codes;
            this.nestedAbsmax = nestedAbsmax;
            this.nestedMap = nestedMap.clone();
            this.nestedBlocksize = nestedBlocksize;
            this.offset = offset;
        }

        @Override
        public float at(long block) {
            return decode(codes, nestedAbsmax, nestedMap, nestedBlocksize, offset, block);
        }

        /** The same values as {@link #at}, walking the nested blocks without a division per block. */
        @Override
        public void fill(long firstBlock, float[] out, int count) {
            long nested = firstBlock / nestedBlocksize;
            long inNested = firstBlock - nested * nestedBlocksize;
            float scale = count > 0 ? nestedAbsmax.get(LittleEndian.F32, nested * 4) : 0f;
            for (int i = 0; i < count; i++) {
                int code = codes.get(ValueLayout.JAVA_BYTE, firstBlock + i) & 0xFF;
                float scaled = nestedMap[code] * scale;
                out[i] = scaled + offset;
                if (++inNested == nestedBlocksize && i + 1 < count) {
                    inNested = 0;
                    scale = nestedAbsmax.get(LittleEndian.F32, ++nested * 4);
                }
            }
        }

        /** {@code nested_map[code[b]] * nested_absmax[b / nested_blocksize] + offset}: multiply, round, add, round. */
        public static float decode(MemorySegment codes, MemorySegment nestedAbsmax, float[] nestedMap,
                                   long nestedBlocksize, float offset, long block) {
            int code = codes.get(ValueLayout.JAVA_BYTE, block) & 0xFF;
            float scaled = nestedMap[code] * nestedAbsmax.get(LittleEndian.F32, (block / nestedBlocksize) * 4);
            return scaled + offset;
        }
    }

    /**
     * The value of each of the 16 codes. For FP4 the CUDA kernel ({@code dDequantizeFP4Tree})
     * multiplies the magnitude by absmax and then by a sign taken from bit 3 of the code, so
     * a zero magnitude comes out as {@code -0.0} for codes 8..15 even where
     * {@code quant_map} stores {@code +0.0}. Giving zero entries the sign of bit 3 and
     * multiplying once yields the same bits for every absmax (the sign of a product of zeros
     * does not depend on the order). NF4 uses {@code quant_map} as stored.
     */
    public static float[] codeValues(float[] quantMap, boolean fp4) {
        if (quantMap.length != 16) throw new IllegalArgumentException("a 4-bit code book has 16 entries");
        float[] v = quantMap.clone();
        if (fp4) {
            for (int c = 0; c < 16; c++) {
                if (v[c] == 0.0f) v[c] = (c & 8) != 0 ? -0.0f : 0.0f;
            }
        }
        return v;
    }

    /**
     * Writes elements {@code [first, first + count)} of a 4-bit tensor of {@code elements}
     * values into {@code dest} as {@code target} (BF16, F16 or F32, little-endian).
     *
     * @param packed     {@code (elements + 1) / 2} bytes of codes, high nibble first
     * @param absmax     per-block absmax
     * @param codeValues 16 code values, from {@link #codeValues}
     * @param blocksize  elements per block
     */
    public static void decode(MemorySegment packed, Absmax absmax, float[] codeValues, long blocksize,
                              long elements, long first, long count, DType target, MemorySegment dest) {
        decodeWith(packed, absmax, codeValues, blocksize, elements, first, count, target, dest, OutputBits.vectorNow());
    }

    /** {@link #decode} on the scalar path only: the fallback, and the reference the vector path is tested against. */
    public static void decodeScalar(MemorySegment packed, Absmax absmax, float[] codeValues, long blocksize,
                                    long elements, long first, long count, DType target, MemorySegment dest) {
        decodeWith(packed, absmax, codeValues, blocksize, elements, first, count, target, dest, false);
    }

    static void decodeWith(MemorySegment packed, Absmax absmax, float[] codeValues, long blocksize,
                               long elements, long first, long count, DType target, MemorySegment dest,
                               boolean vector) {
        int kind = OutputBits.kind(target);
        OutputBits.checkChunk(first, count, elements, kind, dest.byteSize());
        if (codeValues.length != 16) throw new IllegalArgumentException("a 4-bit code book has 16 entries");
        if (blocksize < 1) throw new IllegalArgumentException("blocksize must be positive");
        if (packed.byteSize() < (elements + 1) / 2) {
            throw new IllegalArgumentException("packed codes hold " + packed.byteSize() + " bytes, "
                    + elements + " elements need " + (elements + 1) / 2);
        }
        if (vector && kind == OutputBits.BF16 && OutputBits.VECTOR_512) {
            VectorKernels.fourBitBf16(packed, absmax, codeValues, blocksize, first, count, dest);
            return;
        }
        long[] table = new long[16];
        long end = first + count;
        long e = first;
        long out = 0;
        if (count == 0) return;
        long block = first / blocksize;
        float[] scales = absmaxBuffer(block, end, blocksize);
        int j = scales.length;
        while (e < end) {
            if (j == scales.length) {
                absmax.fill(block, scales, (int) Math.min(scales.length, (end - 1) / blocksize - block + 1));
                j = 0;
            }
            long blockEnd = Math.min((block + 1) * blocksize, end);
            float a = scales[j++];
            block++;
            for (int c = 0; c < 16; c++) table[c] = OutputBits.encode(codeValues[c] * a, kind);
            out = kind == OutputBits.F32
                    ? run32(packed, table, e, blockEnd, dest, out)
                    : run16(packed, table, e, blockEnd, dest, out);
            e = blockEnd;
        }
    }

    /** Four 16-bit outputs from two packed bytes (low 16 bits of {@code two}). */
    private static long quad16(long[] t, int two) {
        int b0 = two & 0xFF;
        int b1 = (two >>> 8) & 0xFF;
        return t[b0 >>> 4] | t[b0 & 15] << 16 | t[b1 >>> 4] << 32 | t[b1 & 15] << 48;
    }

    static long run16(MemorySegment packed, long[] t, long s, long e, MemorySegment dest, long o) {
        if ((s & 1) != 0 && s < e) {
            int b = packed.get(ValueLayout.JAVA_BYTE, s >>> 1) & 0xFF;
            dest.set(LittleEndian.I16, o, (short) t[b & 15]);
            s++;
            o += 2;
        }
        for (; e - s >= 16; s += 16, o += 32) {
            long in = packed.get(LittleEndian.I64, s >>> 1);
            dest.set(LittleEndian.I64, o, quad16(t, (int) in));
            dest.set(LittleEndian.I64, o + 8, quad16(t, (int) (in >>> 16)));
            dest.set(LittleEndian.I64, o + 16, quad16(t, (int) (in >>> 32)));
            dest.set(LittleEndian.I64, o + 24, quad16(t, (int) (in >>> 48)));
        }
        for (; e - s >= 2; s += 2, o += 4) {
            int b = packed.get(ValueLayout.JAVA_BYTE, s >>> 1) & 0xFF;
            dest.set(LittleEndian.I32, o, (int) (t[b >>> 4] | t[b & 15] << 16));
        }
        if (s < e) {
            int b = packed.get(ValueLayout.JAVA_BYTE, s >>> 1) & 0xFF;
            dest.set(LittleEndian.I16, o, (short) t[b >>> 4]);
            o += 2;
        }
        return o;
    }

    private static long run32(MemorySegment packed, long[] t, long s, long e, MemorySegment dest, long o) {
        if ((s & 1) != 0 && s < e) {
            int b = packed.get(ValueLayout.JAVA_BYTE, s >>> 1) & 0xFF;
            dest.set(LittleEndian.I32, o, (int) t[b & 15]);
            s++;
            o += 4;
        }
        for (; e - s >= 16; s += 16, o += 64) {
            long in = packed.get(LittleEndian.I64, s >>> 1);
            for (int j = 0; j < 8; j++) {
                int b = (int) (in >>> (8 * j)) & 0xFF;
                dest.set(LittleEndian.I64, o + 8L * j, t[b >>> 4] | t[b & 15] << 32);
            }
        }
        for (; e - s >= 2; s += 2, o += 8) {
            int b = packed.get(ValueLayout.JAVA_BYTE, s >>> 1) & 0xFF;
            dest.set(LittleEndian.I64, o, t[b >>> 4] | t[b & 15] << 32);
        }
        if (s < e) {
            int b = packed.get(ValueLayout.JAVA_BYTE, s >>> 1) & 0xFF;
            dest.set(LittleEndian.I32, o, (int) t[b >>> 4]);
            o += 4;
        }
        return o;
    }
}
