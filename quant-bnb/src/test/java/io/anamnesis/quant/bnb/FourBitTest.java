package io.anamnesis.quant.bnb;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.RecoveryPlan;
import io.anamnesis.api.Role;
import io.anamnesis.api.Shape;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static io.anamnesis.quant.bnb.Fixtures.FP4;
import static io.anamnesis.quant.bnb.Fixtures.NF4;
import static io.anamnesis.quant.bnb.Fixtures.W;
import static org.assertj.core.api.Assertions.assertThat;

class FourBitTest {

    private static int f32Bits(byte[] out, int e) {
        return ByteBuffer.wrap(out).order(ByteOrder.LITTLE_ENDIAN).getInt(4 * e);
    }

    @Test
    void nf4ReadsHighNibbleFirst() {
        // byte 0x0F: element 0 is code 0 (-1.0), element 1 is code 15 (+1.0); absmax 2.5.
        // byte 0x78: element 2 is code 7 (0.0), element 3 is code 8 (0.07958029955625534f).
        MemoryArchive a = Fixtures.fourBit("nf4", 64, new long[]{4}, new int[]{0, 15, 7, 8}, new float[]{2.5f});
        byte[] out = Fixtures.recover(a, DType.F32);
        assertThat(Float.intBitsToFloat(f32Bits(out, 0))).isEqualTo(-2.5f);
        assertThat(Float.intBitsToFloat(f32Bits(out, 1))).isEqualTo(2.5f);
        assertThat(f32Bits(out, 2)).isEqualTo(0);
        assertThat(Float.intBitsToFloat(f32Bits(out, 3))).isEqualTo(0.07958029955625534f * 2.5f);
    }

    @Test
    void nf4IsCodeValueTimesBlockAbsmaxAtEveryTarget() {
        int n = 256;
        int[] codes = Fixtures.codes(n, 3);
        float[] absmax = {0.5f, 3.0f, 0.0123f, 117.25f};
        MemoryArchive a = Fixtures.fourBit("nf4", 64, new long[]{16, 16}, codes, absmax);
        float[] want = new float[n];
        for (int e = 0; e < n; e++) want[e] = NF4[codes[e]] * absmax[e / 64];
        for (DType t : List.of(DType.F32, DType.BF16, DType.F16)) {
            assertThat(Fixtures.recover(a, t)).as("%s", t).isEqualTo(Fixtures.encode(want, t));
        }
    }

    @Test
    void fp4CodeEightGivesNegativeZeroThoughQuantMapSaysPlusZero() {
        assertThat(Float.floatToRawIntBits(FP4[8])).as("the stored quant_map holds +0.0 at 8").isZero();
        int[] codes = {8, 0, 8, 3, 11, 1};
        float[] absmax = {1.5f};
        MemoryArchive a = Fixtures.fourBit("fp4", 64, new long[]{6}, codes, absmax);
        byte[] out = Fixtures.recover(a, DType.F32);
        assertThat(f32Bits(out, 0)).isEqualTo(0x8000_0000);
        assertThat(f32Bits(out, 1)).isEqualTo(0x0000_0000);
        assertThat(f32Bits(out, 2)).isEqualTo(0x8000_0000);
        assertThat(Float.intBitsToFloat(f32Bits(out, 3))).isEqualTo((12f / 12f) * 1.5f);
        assertThat(Float.intBitsToFloat(f32Bits(out, 4))).isEqualTo((-12f / 12f) * 1.5f);
        assertThat(Float.intBitsToFloat(f32Bits(out, 5))).isEqualTo((0.0625f / 12f) * 1.5f);
        byte[] bf16 = Fixtures.recover(a, DType.BF16);
        assertThat(bf16[0]).isEqualTo((byte) 0x00);
        assertThat(bf16[1]).isEqualTo((byte) 0x80);
        byte[] f16 = Fixtures.recover(a, DType.F16);
        assertThat(f16[1]).isEqualTo((byte) 0x80);
        assertThat(f16[3]).isEqualTo((byte) 0x00);
    }

    @Test
    void fp4MatchesSignedTableEverywhereElse() {
        int n = 300;
        int[] codes = Fixtures.codes(n, 5);
        float[] absmax = {0.75f, 2.0f, 1e-3f, 9.5f, 0.3f};
        MemoryArchive a = Fixtures.fourBit("fp4", 64, new long[]{n}, codes, absmax);
        float[] want = new float[n];
        for (int e = 0; e < n; e++) {
            // CUDA dDequantizeFP4Tree: magnitude * absmax, then the sign of bit 3.
            float magnitude = Math.abs(FP4[codes[e]]);
            want[e] = (magnitude * absmax[e / 64]) * ((codes[e] & 8) != 0 ? -1.0f : 1.0f);
        }
        for (DType t : List.of(DType.F32, DType.BF16, DType.F16)) {
            assertThat(Fixtures.recover(a, t)).as("%s", t).isEqualTo(Fixtures.encode(want, t));
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {32, 64, 128, 256, 512, 1024, 2048, 4096})
    void everyBitsandbytesBlocksizeWithAShortOddLastBlock(int blocksize) {
        int n = 3 * blocksize + 7; // odd, and not a multiple of the block size
        int[] codes = Fixtures.codes(n, blocksize);
        float[] absmax = {0.25f, 1.75f, 40.0f, 0.0078125f};
        MemoryArchive a = Fixtures.fourBit("nf4", blocksize, new long[]{n}, codes, absmax);
        float[] want = new float[n];
        for (int e = 0; e < n; e++) want[e] = NF4[codes[e]] * absmax[e / blocksize];
        for (DType t : List.of(DType.F32, DType.BF16, DType.F16)) {
            assertThat(Fixtures.recover(a, t)).as("%s", t).isEqualTo(Fixtures.encode(want, t));
            assertThat(Fixtures.recoverInChunks(a, t, 1)).as("%s by blocks", t).isEqualTo(Fixtures.encode(want, t));
        }
    }

    @Test
    void oneElementTensor() {
        MemoryArchive a = Fixtures.fourBit("nf4", 64, new long[]{1, 1}, new int[]{14}, new float[]{4.0f});
        assertThat(Fixtures.recover(a, DType.F32)).isEqualTo(Fixtures.encode(new float[]{NF4[14] * 4.0f}, DType.F32));
    }

    /** A multiply-then-add triple whose fused result differs, so the test below can fail. */
    private static float[] unfusedTriple() {
        for (int i = 1; i < 10_000; i++) {
            float q = (i % 255 - 127) / 127.0f;
            float s = 0.00913f + i * 1e-6f;
            float off = 0.0505270659923553f;
            if (q * s + off != Math.fma(q, s, off)) return new float[]{q, s, off};
        }
        throw new AssertionError("no triple found");
    }

    @Test
    void doubleQuantMultipliesThenAddsOffsetWithoutFusing() {
        float[] t = unfusedTriple();
        int blocksize = 64;
        int blocks = 70; // three nested blocks of 32
        int n = blocks * blocksize - 5;
        int[] codes = Fixtures.codes(n, 11);
        byte[] absmaxCodes = new byte[blocks];
        float[] nestedMap = new float[256];
        for (int c = 0; c < 256; c++) nestedMap[c] = (c - 127.5f) / 128f;
        nestedMap[200] = t[0];
        for (int b = 0; b < blocks; b++) absmaxCodes[b] = (byte) (b == 37 ? 200 : (b * 37 + 5));
        float[] nestedAbsmax = {0.031f, t[1], 0.017f};
        float offset = t[2];
        byte[] packed = Fixtures.pack(codes);
        MemoryArchive a = new MemoryArchive()
                .add(W, DType.U8, new long[]{packed.length, 1}, packed)
                .add(W + ".absmax", DType.U8, new long[]{blocks}, absmaxCodes)
                .f32(W + ".quant_map", NF4)
                .f32(W + ".nested_absmax", nestedAbsmax)
                .f32(W + ".nested_quant_map", nestedMap)
                .json(W + ".quant_state.bitsandbytes__nf4", "{\"quant_type\": \"nf4\", \"blocksize\": 64, "
                        + "\"dtype\": \"float32\", \"shape\": [" + n + "], \"nested_blocksize\": 32, "
                        + "\"nested_dtype\": \"float32\", \"nested_offset\": " + (double) offset + "}");
        float[] absmax = new float[blocks];
        for (int b = 0; b < blocks; b++) {
            float scaled = nestedMap[absmaxCodes[b] & 0xFF] * nestedAbsmax[b / 32];
            absmax[b] = scaled + offset;
        }
        assertThat(absmax[37]).as("block 37 is the unfused triple").isNotEqualTo(Math.fma(t[0], t[1], t[2]));
        float[] want = new float[n];
        for (int e = 0; e < n; e++) want[e] = NF4[codes[e]] * absmax[e / blocksize];
        for (DType d : List.of(DType.F32, DType.BF16, DType.F16)) {
            assertThat(Fixtures.recover(a, d)).as("%s", d).isEqualTo(Fixtures.encode(want, d));
            // chunks that start inside a nested block and cross nested-block boundaries
            assertThat(Fixtures.recoverInChunks(a, d, 1)).as("%s by blocks", d).isEqualTo(Fixtures.encode(want, d));
            assertThat(Fixtures.recoverInChunks(a, d, 5)).as("%s by 5 blocks", d).isEqualTo(Fixtures.encode(want, d));
        }
        Recovery r = Fixtures.only(a);
        assertThat(r.description()).isEqualTo("bitsandbytes NF4, block 64, double-quant (nested 32)");
        assertThat(r.inputs()).containsExactly(
                Map.entry(W, Role.QUANTIZED),
                Map.entry(W + ".absmax", Role.ABSMAX),
                Map.entry(W + ".quant_map", Role.QUANT_MAP),
                Map.entry(W + ".nested_absmax", Role.ABSMAX),
                Map.entry(W + ".nested_quant_map", Role.QUANT_MAP),
                Map.entry(W + ".quant_state.bitsandbytes__nf4", Role.QUANT_STATE));
    }

    @Test
    void claimNamesOutputShapeRolesAndDescription() {
        MemoryArchive a = Fixtures.fourBit("fp4", 128, new long[]{8, 32}, Fixtures.codes(256, 0), new float[]{1f, 2f});
        Recovery r = Fixtures.only(a);
        assertThat(r.outputName()).isEqualTo(W);
        assertThat(r.outputShape()).isEqualTo(Shape.of(8, 32));
        assertThat(r.scheme()).isEqualTo("bnb");
        assertThat(r.description()).isEqualTo("bitsandbytes FP4, block 128");
        assertThat(r.kernel().granule()).isEqualTo(128);
        assertThat(r.inputs()).containsExactly(
                Map.entry(W, Role.QUANTIZED),
                Map.entry(W + ".absmax", Role.ABSMAX),
                Map.entry(W + ".quant_map", Role.QUANT_MAP),
                Map.entry(W + ".quant_state.bitsandbytes__fp4", Role.QUANT_STATE));
    }

    @Test
    void chunksInAnyOrderAndOnAnyThreadGiveTheSameBytes() throws Exception {
        int n = 64 * 97 + 33;
        int[] codes = Fixtures.codes(n, 1);
        float[] absmax = new float[98];
        for (int b = 0; b < absmax.length; b++) absmax[b] = 0.01f * (b + 1);
        MemoryArchive a = Fixtures.fourBit("nf4", 64, new long[]{n}, codes, absmax);
        byte[] whole = Fixtures.recover(a, DType.BF16);
        assertThat(Fixtures.recoverInChunks(a, DType.BF16, 3)).isEqualTo(whole);

        Recovery r = Fixtures.only(a);
        try (Arena arena = Arena.ofShared(); ExecutorService pool = Executors.newFixedThreadPool(4)) {
            MemorySegment dest = arena.allocate(2L * n);
            var filler = r.kernel().open(a, arena, DType.BF16);
            List<Future<?>> jobs = new java.util.ArrayList<>();
            for (long first = 0; first < n; first += 64 * 5) {
                long f = first;
                long count = Math.min(64 * 5, n - first);
                jobs.add(pool.submit(() -> filler.fill(f, count, dest.asSlice(2 * f, 2 * count))));
            }
            for (Future<?> j : jobs) j.get();
            assertThat(dest.toArray(ValueLayout.JAVA_BYTE)).isEqualTo(whole);
        }
    }

    @Test
    void publicRouteMaterializesTheRecoveredTensor() {
        int[] codes = Fixtures.codes(128, 2);
        float[] absmax = {1.25f, 0.5f};
        MemoryArchive a = Fixtures.fourBit("nf4", 64, new long[]{2, 64}, codes, absmax);
        Anamnesis amn = Anamnesis.of(List.of(), List.of(), List.of(new BnbDequantizer()));
        RecoveryPlan plan = amn.plan(a, DType.BF16).requireComplete();
        assertThat(plan.outputs()).hasSize(1);
        assertThat(plan.roles()).hasSize(4);
        float[] want = new float[128];
        for (int e = 0; e < 128; e++) want[e] = NF4[codes[e]] * absmax[e / 64];
        try (Arena arena = Arena.ofConfined()) {
            assertThat(plan.materialize(W, arena).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(Fixtures.encode(want, DType.BF16));
        }
    }
}
