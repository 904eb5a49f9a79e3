package io.anamnesis.corpus;

import io.anamnesis.format.gguf.GgufType;
import io.anamnesis.quant.gguf.GgufBlockType;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Optional;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * ggml's type table is written twice, because neither module may depend on the other:
 * format-gguf's {@link GgufType} (every type a GGUF file may store) and quant-gguf's
 * {@link GgufBlockType} (every block type it decodes, and the float types it encodes). A
 * reader sizes tensors by one and a dequantizer decodes them by the other, so they must agree
 * on every id either knows.
 */
class GgmlTypeTablesTest {
    @Test
    void formatAndQuantModulesAgreeOnEveryGgmlTypeId() {
        TreeSet<Integer> ids = new TreeSet<>();
        GgufType.ALL.forEach(t -> ids.add(t.ggmlId()));
        Arrays.stream(GgufBlockType.values()).forEach(t -> ids.add(t.ggmlId()));

        for (int id : ids) {
            Optional<GgufType> stored = GgufType.byId(id);
            Optional<GgufBlockType> decoded = Arrays.stream(GgufBlockType.values()).filter(t -> t.ggmlId() == id).findFirst();
            assertThat(stored).as("ggml type id %d, known to quant-gguf, in format-gguf's table", id).isPresent();
            GgufType f = stored.get();
            // quant-gguf knows every block type and, for the forget path, the float types
            // ggml_quantize_chunk writes (F32, F16, BF16); the integer types are format-gguf's alone
            if (!f.isBlock() && decoded.isEmpty()) continue;
            assertThat(decoded).as("block type %s (id %d) in quant-gguf's table", f, id).isPresent();
            GgufBlockType q = decoded.get();
            assertThat(q.name()).as("name of id %d", id).isEqualTo(f.name());
            assertThat(q.blockElements()).as("elements per block of %s", f).isEqualTo(f.blockElements());
            assertThat(q.blockBytes()).as("bytes per block of %s", f).isEqualTo(f.blockBytes());
            // the dequantizer and the quantizer find a type by the name of the dtype the reader gives a tensor
            assertThat(GgufBlockType.byName(f.dtype().name())).as("quant-gguf's type for dtype %s", f.dtype()).contains(q);
        }
    }
}
