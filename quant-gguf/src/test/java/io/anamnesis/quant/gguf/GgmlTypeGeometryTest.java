package io.anamnesis.quant.gguf;

import io.anamnesis.quant.gguf.llama.GgmlType;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The type choice's table of ggml types agrees with the codecs' on every type, the float types
 * included: the quantizer finds a type's encoder and decoder by its name.
 */
class GgmlTypeGeometryTest {
    @Test
    void everyTypeHasTheCodecsIdAndGeometry() {
        for (GgmlType t : GgmlType.values()) {
            GgufBlockType b = GgufBlockType.byName(t.name()).orElseThrow(() -> new AssertionError("no decoder for " + t));
            assertThat(t.id()).as(t.name()).isEqualTo(b.ggmlId());
            assertThat(t.blockElements()).as(t.name()).isEqualTo(b.blockElements());
            assertThat(t.blockBytes()).as(t.name()).isEqualTo(b.blockBytes());
            assertThat(GgufQuantizer.dtypeOf(t).blockBytes()).isEqualTo(b.blockBytes());
        }
    }
}
