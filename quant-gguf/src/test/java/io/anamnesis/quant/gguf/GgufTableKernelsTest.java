package io.anamnesis.quant.gguf;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The lookup kernels give, value for value, the F32 decode of {@link GgufKernels} narrowed
 * as {@link GgufKernel#decode} narrows it, on random blocks whose f16 scales include NaN
 * (with a full payload too), infinities, zeros of both signs, subnormals and the largest
 * finite value; and {@link GgufKernel#decode} (scalar) takes them for BF16 and F16.
 */
class GgufTableKernelsTest {
    private static final short[] SPECIAL = {0x7E00, 0x7FFF, (short) 0xFE01, 0x7C00, (short) 0xFC00, 0, (short) 0x8000,
            0x0001, (short) 0x83FF, 0x7BFF, (short) 0xFBFF, 0x3C00};

    @ParameterizedTest(name = "{0} to {1}")
    @CsvSource({"Q4_0, BF16", "Q4_0, F16", "Q4_K, BF16", "Q4_K, F16", "IQ4_NL, BF16",
            "IQ4_NL, F16", "IQ4_XS, BF16", "IQ4_XS, F16", "MXFP4, BF16", "MXFP4, F16"})
    void equalsTheDecodeThenTheNarrowing(String typeName, String targetName) {
        GgufBlockType type = GgufBlockType.valueOf(typeName);
        boolean bf16 = targetName.equals("BF16");
        int blocks = 600;
        byte[] raw = new byte[blocks * type.blockBytes()];
        SplittableRandom r = new SplittableRandom(typeName.hashCode() * 31L + targetName.hashCode());
        for (int i = 0; i < raw.length; i++) raw[i] = (byte) r.nextInt(256);
        for (int b = 0; b < blocks; b++) {
            int at = b * type.blockBytes();
            // d (and dmin for Q4_K): ordinary scales mostly, every special value in
            // some blocks; MXFP4's E8M0 scale byte stays random (all 256 values occur)
            if (type == GgufBlockType.MXFP4) continue;
            boolean two = type == GgufBlockType.Q4_K;
            for (int k = 0; k < (two ? 2 : 1); k++) {
                short h = b % 3 == 0 ? SPECIAL[(b / 3 + k) % SPECIAL.length]
                        : Float.floatToFloat16((float) r.nextDouble(-0.05, 0.05));
                raw[at + 2 * k] = (byte) h;
                raw[at + 2 * k + 1] = (byte) (h >> 8);
            }
        }
        int n = blocks * type.blockElements();
        float[] values = new float[n];
        type.decode(raw, 0, values, 0, blocks);
        short[] want = new short[n];
        for (int i = 0; i < n; i++) {
            want[i] = bf16 ? Floats.f32ToBf16(Float.floatToRawIntBits(values[i])) : Float.floatToFloat16(values[i]);
        }
        assertThat(GgufTableKernels.decodes(type)).isTrue();
        short[] got = new short[n];
        GgufTableKernels.decode(type, raw, 0, got, 0, blocks, bf16);
        for (int i = 0; i < n; i++) {
            assertThat(got[i]).as("value %d (block %d)", i, i / type.blockElements()).isEqualTo(want[i]);
        }
        // through the scalar dispatcher, from a segment, in batches
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(raw.length);
            MemorySegment.copy(raw, 0, data, ValueLayout.JAVA_BYTE, 0, raw.length);
            MemorySegment dest = arena.allocate(2L * n);
            GgufKernel.decode(type, data, 0, n, bf16 ? DType.BF16 : DType.F16, dest, false);
            short[] viaKernel = dest.toArray(ValueLayout.JAVA_SHORT.withOrder(ByteOrder.LITTLE_ENDIAN));
            assertThat(viaKernel).isEqualTo(want);
        }
    }
}
