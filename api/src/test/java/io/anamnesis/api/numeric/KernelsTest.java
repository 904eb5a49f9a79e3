package io.anamnesis.api.numeric;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class KernelsTest {

    @Test
    void thePropertyNamesOneOfThreeChoicesAndAutoOtherwise() {
        assertThat(Kernels.parse("scalar")).isEqualTo(Kernels.Choice.SCALAR);
        assertThat(Kernels.parse(" Vector ")).isEqualTo(Kernels.Choice.VECTOR);
        assertThat(Kernels.parse("auto")).isEqualTo(Kernels.Choice.AUTO);
        assertThat(Kernels.parse(null)).isEqualTo(Kernels.Choice.AUTO);
        assertThat(Kernels.parse("race")).isEqualTo(Kernels.Choice.AUTO);
    }

    @Test
    void vectorKernelsAreAllowedOnlyWithTheModuleAndWithoutAScalarChoice() {
        boolean module = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();
        assertThat(Kernels.vectorAllowed()).isEqualTo(module && Kernels.choice() != Kernels.Choice.SCALAR);
    }
}
