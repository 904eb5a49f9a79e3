package io.anamnesis.api;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ValuesTest {
    @Test
    void shapeCountsElementsAndRefusesOverflow() {
        assertThat(Shape.of(4096, 11008).elementCount()).isEqualTo(45_088_768L);
        assertThat(Shape.SCALAR.elementCount()).isEqualTo(1);
        assertThat(Shape.of(3, 0, 5).elementCount()).isZero();
        assertThatThrownBy(() -> Shape.of(1L << 32, 1L << 32).elementCount()).isInstanceOf(ArithmeticException.class);
        assertThatThrownBy(() -> Shape.of(2, -1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void shapeReversesForGgufOrder() {
        assertThat(Shape.of(512, 128).reversed()).isEqualTo(Shape.of(128, 512));
        assertThat(Shape.of(2, 3).toString()).isEqualTo("[2, 3]");
    }

    @Test
    void dtypeSizesCountLogicalElements() {
        assertThat(DType.BF16.byteSize(10)).isEqualTo(20);
        assertThat(DType.F4.byteSize(6)).isEqualTo(3);          // two 4-bit values a byte
        assertThat(DType.F6_E2M3.byteSize(8)).isEqualTo(6);     // four 6-bit values in 3 bytes
        DType q4k = new DType("Q4_K", DType.Kind.QUANTIZED, 256, 144);
        assertThat(q4k.byteSize(512)).isEqualTo(288);
        assertThat(q4k.fitsWholeBlocks(300)).isFalse();
        assertThatThrownBy(() -> DType.F4.byteSize(3)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> DType.F64.byteSize(Long.MAX_VALUE / 4)).isInstanceOf(ArithmeticException.class);
    }

    @Test
    void dtypeLookupUsesSafetensorsSpelling() {
        assertThat(DType.standard("f8_e4m3")).contains(DType.F8_E4M3);
        assertThat(DType.standard("Q4_K")).isEmpty();
        assertThat(DType.SAFETENSORS).hasSize(22);
        assertThat(DType.recoveryTarget("bf16")).isEqualTo(DType.BF16);
        assertThatThrownBy(() -> DType.recoveryTarget("q4")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void errorsCarryKindExitCodeAndTensor() {
        AnamnesisException e = MalformedFileException.inTensor("w", "offsets overlap");
        assertThat(e.kind()).isEqualTo(ErrorKind.MALFORMED);
        assertThat(e.kind().exitCode()).isEqualTo(3);
        assertThat(e.tensor()).contains("w");
        assertThat(e.getMessage()).isEqualTo("tensor 'w': offsets overlap");
        assertThat(new LimitExceededException("x").kind().shortName()).isEqualTo("limit");
        assertThat(new SecurityViolationException("x").kind().exitCode()).isEqualTo(5);
        assertThat(new UnsupportedFeatureException("x").kind().exitCode()).isEqualTo(6);
        assertThat(new TensorIOException("x").kind().exitCode()).isEqualTo(7);
        AnamnesisException usage = InvalidRequestException.inTensor("w", "needs an importance matrix");
        assertThat(usage.kind().exitCode()).isEqualTo(2);
        assertThat(usage.kind().shortName()).isEqualTo("usage");
        assertThat(usage.getMessage()).isEqualTo("tensor 'w': needs an importance matrix");
    }

    @Test
    void limitsCheckThrowsTypedError() {
        ParseLimits.check("tensor count", 10, 10);
        assertThatThrownBy(() -> ParseLimits.check("tensor count", 11, 10))
                .isInstanceOf(LimitExceededException.class).hasMessageContaining("tensor count is 11");
        assertThat(ParseLimits.defaults().maxHeaderBytes()).isEqualTo(100_000_000L);
    }
}
