package io.anamnesis.quant.gguf;

import io.anamnesis.quant.gguf.llama.GgmlType;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The type choice's table of ggml types agrees with the decoders' on every block type. */
class GgmlTypeGeometryTest {
    @Test
    void everyBlockTypeHasTheDecodersIdAndGeometry() {
        for (GgmlType t : GgmlType.values()) {
            if (!t.isQuantized()) continue;
            GgufBlockType b = GgufBlockType.byName(t.name()).orElseThrow(() -> new AssertionError("no decoder for " + t));
            assertThat(t.id()).as(t.name()).isEqualTo(b.ggmlId());
            assertThat(t.blockElements()).as(t.name()).isEqualTo(b.blockElements());
            assertThat(t.blockBytes()).as(t.name()).isEqualTo(b.blockBytes());
            assertThat(GgufQuantizer.dtypeOf(t).blockBytes()).isEqualTo(b.blockBytes());
        }
    }
}
