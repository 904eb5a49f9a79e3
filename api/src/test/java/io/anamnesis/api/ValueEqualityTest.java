package io.anamnesis.api;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** DType and TensorEntry write out equals and hashCode: they must mean what a record's do. */
class ValueEqualityTest {

    @Test
    void dtypesAreEqualExactlyWhenEveryComponentIs() {
        DType a = new DType("Q4_K", DType.Kind.QUANTIZED, 256, 144);
        DType same = new DType("Q4_K", DType.Kind.QUANTIZED, 256, 144);
        assertThat(a).isEqualTo(same).hasSameHashCodeAs(same);
        assertThat(new DType("F16", DType.Kind.FLOAT, 1, 2)).isEqualTo(DType.F16).hasSameHashCodeAs(DType.F16);
        assertThat(a).isNotEqualTo(new DType("Q4_k", DType.Kind.QUANTIZED, 256, 144))
                .isNotEqualTo(new DType("Q4_K", DType.Kind.FLOAT, 256, 144))
                .isNotEqualTo(new DType("Q4_K", DType.Kind.QUANTIZED, 128, 144))
                .isNotEqualTo(new DType("Q4_K", DType.Kind.QUANTIZED, 256, 145))
                .isNotEqualTo("Q4_K")
                .isNotEqualTo(null);
        assertThat(DType.F16).isNotEqualTo(DType.BF16);
    }

    @Test
    void entriesAreEqualExactlyWhenEveryComponentIs() {
        TensorEntry a = TensorEntry.of("w", DType.F16, Shape.of(2, 3));
        TensorEntry same = new TensorEntry("w", DType.F16, Shape.of(2, 3), 12);
        assertThat(a).isEqualTo(same).hasSameHashCodeAs(same);
        assertThat(a).isNotEqualTo(TensorEntry.of("v", DType.F16, Shape.of(2, 3)))
                .isNotEqualTo(TensorEntry.of("w", DType.BF16, Shape.of(2, 3)))
                .isNotEqualTo(TensorEntry.of("w", DType.F16, Shape.of(3, 2)))
                .isNotEqualTo(new TensorEntry("w", DType.F16, Shape.of(2, 3), 13))
                .isNotEqualTo(null);
    }
}
