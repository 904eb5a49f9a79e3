package io.anamnesis.quant.bnb;

import io.anamnesis.api.DType;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.testing.MemoryArchive;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/** Small bitsandbytes checkpoints built in code, and the expected bits worked out from the formulas. */
final class Fixtures {
    private Fixtures() {
    }

    static final String W = "model.layers.0.mlp.gate_proj.weight";

    /**
     * The NF4 code book as published in the QLoRA paper / bitsandbytes ({@code create_normal_map}),
     * rounded to float32.
     */
    static final float[] NF4 = {
            -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
            -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
            0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
            0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};

    /**
     * bitsandbytes' FP4 code book ({@code get_4bit_type("fp4")}): the E2M1 magnitudes
     * {0, 0.0625, 8, 12, 4, 6, 2, 3} with bit 3 as sign, divided by 12. Entry 8 is stored as
     * +0.0, as the checkpoint does.
     */
    static final float[] FP4 = new float[16];

    static {
        float[] m = {0f, 0.0625f, 8f, 12f, 4f, 6f, 2f, 3f};
        for (int c = 0; c < 8; c++) {
            FP4[c] = m[c] / 12f;
            FP4[c + 8] = c == 0 ? 0.0f : -m[c] / 12f;
        }
    }

    /** Two codes a byte, HIGH nibble first; an odd count leaves the last low nibble zero. */
    static byte[] pack(int[] codes) {
        byte[] out = new byte[(codes.length + 1) / 2];
        for (int e = 0; e < codes.length; e++) {
            out[e / 2] |= (byte) (e % 2 == 0 ? codes[e] << 4 : codes[e]);
        }
        return out;
    }

    /** A deterministic code sequence that visits every code in every block. */
    static int[] codes(int n, int seed) {
        int[] c = new int[n];
        for (int e = 0; e < n; e++) c[e] = (e * 7 + seed + e / 5) & 15;
        return c;
    }

    static String shapeJson(long[] shape) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < shape.length; i++) b.append(i == 0 ? "" : ", ").append(shape[i]);
        return b.append(']').toString();
    }

    /** A plain 4-bit group as transformers saves it. */
    static MemoryArchive fourBit(String type, int blocksize, long[] shape, int[] codes, float[] absmax) {
        byte[] packed = pack(codes);
        return new MemoryArchive()
                .add(W, DType.U8, new long[]{packed.length, 1}, packed)
                .f32(W + ".absmax", absmax)
                .f32(W + ".quant_map", type.equals("nf4") ? NF4 : FP4)
                .json(W + ".quant_state.bitsandbytes__" + type, "{\"quant_type\": \"" + type + "\", \"blocksize\": "
                        + blocksize + ", \"dtype\": \"float32\", \"shape\": " + shapeJson(shape) + "}");
    }

    /** README formula for BF16: round-to-nearest-even of the F32 bits. */
    static short bf16(float v) {
        int bits = Float.floatToRawIntBits(v);
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }

    /** Expected output bytes for F32 / BF16 / F16 from exact F32 values. */
    static byte[] encode(float[] values, DType target) {
        int width = target.equals(DType.F32) ? 4 : 2;
        ByteBuffer b = ByteBuffer.allocate(values.length * width).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) {
            if (target.equals(DType.F32)) b.putInt(Float.floatToRawIntBits(v));
            else if (target.equals(DType.BF16)) b.putShort(bf16(v));
            else b.putShort(Float.floatToFloat16(v));
        }
        return b.array();
    }

    static List<Recovery> claim(MemoryArchive a) {
        return claim(a, ParseLimits.defaults());
    }

    static List<Recovery> claim(MemoryArchive a, ParseLimits limits) {
        return new BnbDequantizer().claim(new ClaimContext(a, limits));
    }

    static Recovery only(MemoryArchive a) {
        List<Recovery> rs = claim(a);
        if (rs.size() != 1) throw new AssertionError("expected one group, got " + rs.size());
        return rs.getFirst();
    }

    /** The whole output in one fill. */
    static byte[] recover(MemoryArchive a, DType target) {
        Recovery r = only(a);
        long n = r.outputShape().elementCount();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dest = arena.allocate(Math.max(1, target.byteSize(n))).asSlice(0, target.byteSize(n));
            r.kernel().open(a, arena, target).fill(0, n, dest);
            return dest.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    /** The output assembled from granule-aligned chunks of {@code granules} granules, filled last chunk first. */
    static byte[] recoverInChunks(MemoryArchive a, DType target, long granules) {
        Recovery r = only(a);
        long n = r.outputShape().elementCount();
        long chunk = r.kernel().granule() * granules;
        int width = target.equals(DType.F32) ? 4 : 2;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dest = arena.allocate(Math.max(1, n * width)).asSlice(0, n * width);
            var filler = r.kernel().open(a, arena, target);
            for (long first = (n - 1) / chunk * chunk; first >= 0; first -= chunk) {
                long count = Math.min(chunk, n - first);
                filler.fill(first, count, dest.asSlice(first * width, count * width));
            }
            return dest.toArray(ValueLayout.JAVA_BYTE);
        }
    }
}
