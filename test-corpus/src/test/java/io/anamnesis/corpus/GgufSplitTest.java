package io.anamnesis.corpus;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.WriteOptions;
import io.anamnesis.cli.Amn;
import io.anamnesis.format.gguf.GgufWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code amn convert --to gguf --split-max-size}: llama.cpp's gguf-split layout
 * (tools/gguf-split/gguf-split.cpp at ca01960e6a), read back with the spec-level
 * {@link ReferenceGguf}, and opened again as one model by our reader.
 */
class GgufSplitTest {
    @TempDir
    Path dir;

    static final int TENSORS = 6;

    /** GGUF value type ids (gguf_type): u16 = 2, i32 = 5. */
    static final int U16 = 2, I32 = 5;

    Path input() {
        List<PlannedTensor> tensors = new ArrayList<>();
        for (int i = 0; i < TENSORS; i++) {
            int n = i;
            tensors.add(new PlannedTensor("blk." + i + ".w", DType.F32, Shape.of(256), 1,
                    arena -> (first, count, dest) -> {
                        for (long e = 0; e < count; e++) dest.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 4 * e, n * 1000 + first + e);
                    }));
        }
        Map<String, MetaValue> kv = new LinkedHashMap<>();
        kv.put("general.architecture", new MetaValue.Str("llama"));
        kv.put("llama.context_length", new MetaValue.Int(MetaValue.Type.U32, 4096));
        kv.put("general.name", new MetaValue.Str("split me"));
        Path in = dir.resolve("in.gguf");
        new GgufWriter().write(new OutputPlan(Optional.empty(), Map.of(), tensors, kv), in, WriteOptions.threads(1));
        return in;
    }

    static int amn(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Amn.execute(new PrintWriter(out), new PrintWriter(err), args);
        if (code != 0) throw new AssertionError("amn " + String.join(" ", args) + ": " + err);
        return code;
    }

    @Test
    void splitsAsGgufSplitWritesThemAndOpensBackAsOneModel() throws IOException {
        Path in = input();
        ReferenceGguf source = ReferenceGguf.read(in);
        // 1024-byte tensors (already 32-aligned): 2 fit 2500 bytes, a third would not -> 3 splits of 2
        amn("convert", "--quiet", "--to", "gguf", "--as-stored", "--split-max-size", "2500", "-o",
                dir.resolve("out.gguf").toString(), in.toString());
        List<Path> splits = new ArrayList<>();
        for (int i = 1; i <= 3; i++) splits.add(dir.resolve(String.format("out-%05d-of-00003.gguf", i)));
        assertThat(dir.resolve("out.gguf")).doesNotExist();
        int seen = 0;
        for (int i = 0; i < 3; i++) {
            ReferenceGguf s = ReferenceGguf.read(splits.get(i));
            List<String> keys = new ArrayList<>(s.kv.keySet());
            List<String> split = List.of("split.no", "split.tensors.count", "split.count");
            // gguf_set_val_* appends, and gguf-split sets split.count once more at the end
            assertThat(keys.subList(keys.size() - 3, keys.size())).isEqualTo(split);
            if (i == 0) {
                assertThat(keys.subList(0, keys.size() - 3)).containsExactlyElementsOf(source.kv.keySet());
                for (String k : source.kv.keySet()) assertThat(s.kv.get(k).value()).as(k).isEqualTo(source.kv.get(k).value());
            } else {
                assertThat(keys).as("metadata in the first split only").isEqualTo(split);
            }
            assertThat(s.kv.get("split.no").type()).isEqualTo(U16);
            assertThat(s.kv.get("split.no").asLong()).isEqualTo(i);
            assertThat(s.kv.get("split.count").type()).isEqualTo(U16);
            assertThat(s.kv.get("split.count").asLong()).isEqualTo(3);
            assertThat(s.kv.get("split.tensors.count").type()).isEqualTo(I32);
            assertThat(s.kv.get("split.tensors.count").asLong()).isEqualTo(TENSORS);
            assertThat(s.tensors).hasSize(2);
            for (ReferenceGguf.Tensor t : s.tensors) {
                assertThat(t.bytes()).as(t.name()).isEqualTo(source.tensor(t.name()).bytes());
                assertThat(t.name()).isEqualTo("blk." + seen++ + ".w");
            }
        }
        // any split opens the whole model
        try (TensorArchive model = Anamnesis.installed().open(splits.get(1)); Arena arena = Arena.ofConfined()) {
            assertThat(model.tensors()).extracting(TensorEntry::name)
                    .containsExactly("blk.0.w", "blk.1.w", "blk.2.w", "blk.3.w", "blk.4.w", "blk.5.w");
            assertThat(model.metadata()).containsEntry("general.name", "split me");
            TensorEntry last = model.tensor("blk.5.w").orElseThrow();
            assertThat(model.data(last, arena).get(ValueLayout.JAVA_FLOAT_UNALIGNED, 4 * 7)).isEqualTo(5007f);
        }
        // and merges back into the very file it came from: keys, types, tensors
        Path merged = dir.resolve("merged.gguf");
        amn("convert", "--quiet", "--to", "gguf", "--as-stored", "-o", merged.toString(), splits.getFirst().toString());
        assertThat(Files.readAllBytes(merged)).isEqualTo(Files.readAllBytes(in));
        // a folder that holds only the splits (no config.json: not a Hugging Face model) merges the same way
        Path folder = Files.createDirectories(dir.resolve("splits"));
        for (Path s : splits) Files.copy(s, folder.resolve(s.getFileName()));
        Path fromFolder = dir.resolve("from-folder.gguf");
        amn("convert", "--quiet", "--to", "gguf", "--as-stored", "-o", fromFolder.toString(), folder.toString());
        assertThat(Files.readAllBytes(fromFolder)).isEqualTo(Files.readAllBytes(in));
    }

    @Test
    void aSplitWhoseKeysContradictItsPlaceIsMalformed() throws IOException {
        Path in = input();
        amn("convert", "--quiet", "--to", "gguf", "--as-stored", "--split-max-size", "2500", "-o",
                dir.resolve("out.gguf").toString(), in.toString());
        // swap splits 2 and 3: names and split.no now disagree
        Path two = dir.resolve("out-00002-of-00003.gguf");
        Path three = dir.resolve("out-00003-of-00003.gguf");
        Path tmp = dir.resolve("t");
        Files.move(two, tmp);
        Files.move(three, two);
        Files.move(tmp, three);
        StringWriter err = new StringWriter();
        int code = Amn.execute(new PrintWriter(new StringWriter()), new PrintWriter(err), "inspect", two.toString());
        assertThat(code).isEqualTo(3);
        assertThat(err.toString()).contains("out-00002-of-00003.gguf says it is split 3 of 3");
    }
}
