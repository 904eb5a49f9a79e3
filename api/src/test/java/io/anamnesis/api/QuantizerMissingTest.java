package io.anamnesis.api;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A target whose quantizer module is not installed names the module to add, as a missing reader does. */
class QuantizerMissingTest {
    @Test
    void aTargetOfAMissingQuantizerNamesItsModule() {
        Anamnesis none = Anamnesis.of(List.of(), List.of(), List.of());
        assertThatThrownBy(() -> none.quantizer("fp8")).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("add io.anamnesis:anamnesis-quant-fp8");
        assertThatThrownBy(() -> none.quantizer("fp8_e4m3fnuz")).hasMessageContaining("anamnesis-quant-fp8");
        assertThatThrownBy(() -> none.quantizer("NF4")).hasMessageContaining("anamnesis-quant-bnb");
        for (String gguf : List.of("q4_k_m", "iq2_xs", "ggml:q8_0", "tq1_0", "mxfp4_moe", "f16")) {
            assertThatThrownBy(() -> none.quantizer(gguf)).as(gguf).hasMessageContaining("anamnesis-quant-gguf");
        }
        assertThatThrownBy(() -> none.quantizer("zz9")).isInstanceOf(UnsupportedFeatureException.class)
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("add io.anamnesis"));
    }
    /** A null argument is refused at the call, naming it and what to pass instead (it was an NPE from inside). */
    @Test
    void nullArgumentsAreRefusedAtTheCallNamingThem() {
        Anamnesis none = Anamnesis.of(List.of(), List.of(), List.of());
        io.anamnesis.api.testing.MemoryArchive a = new io.anamnesis.api.testing.MemoryArchive();
        assertThatThrownBy(() -> none.planForget(a, "x", ForgetOptions.defaults(), null))
                .isInstanceOf(NullPointerException.class).hasMessageContaining("LossMeter.off()");
        assertThatThrownBy(() -> none.plan(a, DType.BF16, null)).isInstanceOf(NullPointerException.class)
                .hasMessageContaining("limits");
        assertThatThrownBy(() -> none.open(java.nio.file.Path.of("x"), null)).isInstanceOf(NullPointerException.class)
                .hasMessageContaining("ParseLimits.defaults()");
    }
}
