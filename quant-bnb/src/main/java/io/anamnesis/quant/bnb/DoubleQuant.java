package io.anamnesis.quant.bnb;

/**
 * Double quantization of the 4-bit absmax ({@code quantize_4bit(compress_statistics=True)}),
 * as pure static functions: the float32 absmax of every block of a tensor in, the U8 codes,
 * one float32 scale per nested block and the offset out. The inverse of
 * {@link FourBit.NestedAbsmax}.
 *
 * <p>bitsandbytes subtracts the mean of all absmax ({@code offset = absmax.mean()}, one
 * float32 for the whole tensor, then {@code absmax - offset} in float32) and quantizes the
 * result block-wise in nested blocks of 256 with its signed 8-bit dynamic map
 * ({@code quantize_blockwise}): a nested block's scale is its largest {@code |value|}, each
 * value is multiplied by the float32 reciprocal of the scale and takes the nearest code of
 * the map, as {@code dQuantize<0>} searches for it: the boundaries are the float32
 * midpoints {@code (code[i] + code[i+1]) * 0.5f}, and a value exactly on one takes the even
 * index of the two (the pivot the kernel's binary search ends on). NaN takes code 0.
 *
 * <p>The offset: the CUDA mean sums in an order of its own; here the sum is taken in double
 * and the mean rounded once to float32, the nearest float32 to the exact mean for any
 * realistic tensor.
 */
public final class DoubleQuant {
    private DoubleQuant() {
    }

    /** Blocks per nested block, bitsandbytes' only choice ({@code quantize_blockwise(..., blocksize=256)}). */
    public static final int NESTED_BLOCKSIZE = 256;

    /**
     * bitsandbytes' signed 8-bit dynamic map ({@code create_dynamic_map()}), float32 bits, as
     * its checkpoints store it in {@code nested_quant_map} (taken from one: the float32
     * {@code linspace} that builds it rounds differently across torch versions).
     */
    private static final int[] DYNAMIC_MAP_BITS = {
            0xbf7e3333, 0xbf7a999a, 0xbf770000, 0xbf736666, 0xbf6fcccd, 0xbf6c3333, 0xbf68999a, 0xbf650000,
            0xbf616666, 0xbf5dcccd, 0xbf5a3333, 0xbf56999a, 0xbf530000, 0xbf4f6666, 0xbf4bcccd, 0xbf483333,
            0xbf44999a, 0xbf410000, 0xbf3d6666, 0xbf39cccd, 0xbf363334, 0xbf32999a, 0xbf2f0000, 0xbf2b6666,
            0xbf27cccd, 0xbf243334, 0xbf20999a, 0xbf1d0000, 0xbf196666, 0xbf15cccd, 0xbf123334, 0xbf0e999a,
            0xbf0b0000, 0xbf076666, 0xbf03cccc, 0xbf003333, 0xbef93332, 0xbef20000, 0xbeeacccc, 0xbee3999a,
            0xbedc6666, 0xbed53333, 0xbece0000, 0xbec6cccc, 0xbebf999a, 0xbeb86666, 0xbeb13333, 0xbeaa0000,
            0xbea2cccc, 0xbe9b999a, 0xbe946666, 0xbe8d3334, 0xbe860000, 0xbe7d9999, 0xbe6f3333, 0xbe60cccd,
            0xbe526666, 0xbe440000, 0xbe35999a, 0xbe273333, 0xbe18cccd, 0xbe0a6666, 0xbdf80000, 0xbddb3334,
            0xbdc9eb85, 0xbdc428f7, 0xbdbe6667, 0xbdb8a3d7, 0xbdb2e148, 0xbdad1eb8, 0xbda75c2a, 0xbda1999a,
            0xbd9bd70a, 0xbd96147b, 0xbd9051eb, 0xbd8a8f5d, 0xbd84cccd, 0xbd7e147b, 0xbd728f5d, 0xbd670a3d,
            0xbd5b851f, 0xbd500000, 0xbd447ae1, 0xbd38f5c3, 0xbd2d70a3, 0xbd21eb85, 0xbd166667, 0xbd0ae148,
            0xbcfeb852, 0xbce7ae15, 0xbcd0a3d7, 0xbcb9999a, 0xbca28f5d, 0xbc8b851f, 0xbc68f5c3, 0xbc3ae148,
            0xbc1f3b64, 0xbc160418, 0xbc0ccccd, 0xbc039581, 0xbbf4bc6a, 0xbbe24dd3, 0xbbcfdf3b, 0xbbbd70a4,
            0xbbab020d, 0xbb989374, 0xbb8624dd, 0xbb676c8a, 0xbb428f5c, 0xbb1db22d, 0xbaf1a9fc, 0xbaa7ef9d,
            0xba7765ff, 0xba59e83e, 0xba3c6a80, 0xba1eecc1, 0xba016f01, 0xb9c7e283, 0xb98ce705, 0xb923d70b,
            0xb8ba1f4b, 0xb88aefb3, 0xb8378034, 0xb7b24206, 0xb70205ff, 0xb65a1a94, 0xb513a3b7, 0x00000000,
            0x3513a3b7, 0x365a1a94, 0x370205ff, 0x37b24206, 0x38378034, 0x388aefb3, 0x38ba1f4b, 0x3923d70b,
            0x398ce705, 0x39c7e283, 0x3a016f01, 0x3a1eecc1, 0x3a3c6a80, 0x3a59e83e, 0x3a7765ff, 0x3aa7ef9d,
            0x3af1a9fc, 0x3b1db22d, 0x3b428f5c, 0x3b676c8a, 0x3b8624dd, 0x3b989374, 0x3bab020d, 0x3bbd70a4,
            0x3bcfdf3b, 0x3be24dd3, 0x3bf4bc6a, 0x3c039581, 0x3c0ccccd, 0x3c160418, 0x3c1f3b64, 0x3c3ae148,
            0x3c68f5c3, 0x3c8b851f, 0x3ca28f5d, 0x3cb9999a, 0x3cd0a3d7, 0x3ce7ae15, 0x3cfeb852, 0x3d0ae148,
            0x3d166667, 0x3d21eb85, 0x3d2d70a3, 0x3d38f5c3, 0x3d447ae1, 0x3d500000, 0x3d5b851f, 0x3d670a3d,
            0x3d728f5d, 0x3d7e147b, 0x3d84cccd, 0x3d8a8f5d, 0x3d9051eb, 0x3d96147b, 0x3d9bd70a, 0x3da1999a,
            0x3da75c2a, 0x3dad1eb8, 0x3db2e148, 0x3db8a3d7, 0x3dbe6667, 0x3dc428f7, 0x3dc9eb85, 0x3ddb3334,
            0x3df80000, 0x3e0a6666, 0x3e18cccd, 0x3e273333, 0x3e35999a, 0x3e440000, 0x3e526666, 0x3e60cccd,
            0x3e6f3333, 0x3e7d9999, 0x3e860000, 0x3e8d3334, 0x3e946666, 0x3e9b999a, 0x3ea2cccc, 0x3eaa0000,
            0x3eb13333, 0x3eb86666, 0x3ebf999a, 0x3ec6cccc, 0x3ece0000, 0x3ed53333, 0x3edc6666, 0x3ee3999a,
            0x3eeacccc, 0x3ef20000, 0x3ef93332, 0x3f003333, 0x3f03cccc, 0x3f076666, 0x3f0b0000, 0x3f0e999a,
            0x3f123334, 0x3f15cccd, 0x3f196666, 0x3f1d0000, 0x3f20999a, 0x3f243334, 0x3f27cccd, 0x3f2b6666,
            0x3f2f0000, 0x3f32999a, 0x3f363334, 0x3f39cccd, 0x3f3d6666, 0x3f410000, 0x3f44999a, 0x3f483333,
            0x3f4bcccd, 0x3f4f6666, 0x3f530000, 0x3f56999a, 0x3f5a3333, 0x3f5dcccd, 0x3f616666, 0x3f650000,
            0x3f68999a, 0x3f6c3333, 0x3f6fcccd, 0x3f736666, 0x3f770000, 0x3f7a999a, 0x3f7e3333, 0x3f800000
    };

    /** The dynamic map as floats, ascending. */
    public static float[] dynamicMap() {
        float[] m = new float[256];
        for (int i = 0; i < 256; i++) m[i] = Float.intBitsToFloat(DYNAMIC_MAP_BITS[i]);
        return m;
    }

    /** The decision boundaries of a sorted 256-entry code book: float32 midpoints of neighbours. */
    public static float[] boundaries(float[] book) {
        if (book.length != 256) throw new IllegalArgumentException("an 8-bit code book has 256 entries");
        float[] b = new float[255];
        for (int i = 0; i < 255; i++) {
            if (!(book[i] < book[i + 1])) throw new IllegalArgumentException("the code book is not ascending at " + i);
            b[i] = (book[i] + book[i + 1]) * 0.5f;
        }
        return b;
    }

    /** The code of {@code x} (already scaled to [-1, 1]) for the boundaries of a code book. */
    public static int code(float[] boundaries, float x) {
        // the number of boundaries x is above; NaN is above none
        int lo = 0;
        int hi = boundaries.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (x > boundaries[mid]) lo = mid + 1;
            else hi = mid;
        }
        // on a boundary exactly: the even one of its two codes
        if (lo < boundaries.length && x == boundaries[lo] && (lo & 1) == 1) lo++;
        return lo;
    }

    /** {@code absmax.mean()}: the sum in double, rounded once to float32. */
    public static float mean(double sum, long blocks) {
        return blocks == 0 ? 0f : (float) (sum / blocks);
    }

    /**
     * Quantizes the absmax of nested blocks: {@code absmax[off, off + count)}, starting on a
     * nested block boundary, into {@code codes[codesOff...]} and one scale per nested block
     * into {@code scales[scalesOff...]}.
     */
    public static void encode(float[] absmax, int off, int count, float offset, float[] boundaries,
                              byte[] codes, int codesOff, float[] scales, int scalesOff) {
        float[] centered = new float[Math.min(count, NESTED_BLOCKSIZE)];
        for (int nb = 0, s = 0; s < count; nb++, s += NESTED_BLOCKSIZE) {
            int n = Math.min(NESTED_BLOCKSIZE, count - s);
            for (int i = 0; i < n; i++) centered[i] = absmax[off + s + i] - offset;
            float scale = FourBitEncoder.absmax(centered, 0, n);
            scales[scalesOff + nb] = scale;
            float inv = 1.0f / scale;
            for (int i = 0; i < n; i++) codes[codesOff + s + i] = (byte) code(boundaries, centered[i] * inv);
        }
    }
}
