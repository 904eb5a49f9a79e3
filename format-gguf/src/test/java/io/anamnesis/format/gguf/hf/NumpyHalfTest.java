package io.anamnesis.format.gguf.hf;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link ConvertedTensor#numpyF16} and {@link ConvertedTensor#numpyF32} against numpy's own
 * conversions (the constants: numpy 1.24.2's {@code astype(np.float16)} and
 * {@code astype(np.float32)} of these bits on x86-64, as the converter's gguf-py calls them). NaNs
 * are where numpy's software conversion and the JDK's (and x86's {@code vcvtps2ph}) part: numpy
 * keeps a signalling NaN signalling; JDK 25's {@link Float#floatToFloat16} and
 * {@link Float#float16ToFloat} (interpreted and compiled) make it quiet, {@code 0x7f800001} to
 * {@code 0x7e00} and {@code 0x7c01} to {@code 0x7fc02000}.
 */
class NumpyHalfTest {
    @Test
    void narrowingIsNumpysAstypeFloat16() {
        int[] f32 = {0x7fc00000, 0xffc00001, 0x7f800001, 0x7fa00000, 0xff812345, 0x7f802000, 0x477ff000, 0x33000001};
        int[] numpy = {0x7e00, 0xfe00, 0x7c01, 0x7d00, 0xfc09, 0x7c01, 0x7c00, 0x0001};
        for (int i = 0; i < f32.length; i++) {
            assertThat(ConvertedTensor.numpyF16(f32[i]) & 0xFFFF).as(Integer.toHexString(f32[i])).isEqualTo(numpy[i]);
        }
    }

    @Test
    void wideningIsNumpysAstypeFloat32() {
        int[] f16 = {0x7c01, 0x7d00, 0xfc09, 0x7e00, 0xfe01, 0x7c00, 0x0001, 0x7fff};
        int[] numpy = {0x7f802000, 0x7fa00000, 0xff812000, 0x7fc00000, 0xffc02000, 0x7f800000, 0x33800000, 0x7fffe000};
        for (int i = 0; i < f16.length; i++) {
            assertThat(Float.floatToRawIntBits(ConvertedTensor.numpyF32((short) f16[i]))).as(Integer.toHexString(f16[i]))
                    .isEqualTo(numpy[i]);
        }
    }
}
