package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.ForgetOptions;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.spi.WriteOptions;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The {@code hf-to-gguf} cases: a Hugging Face model folder ({@code input/}) converted as
 * llama.cpp's {@code convert_hf_to_gguf.py} converted it to {@code expected.gguf}. The
 * output must be that file byte for byte (the key/values and tensors in its order); when it
 * is not, the first difference is named through {@link ReferenceGguf}, a reader written
 * apart from the library's.
 */
final class HfToGgufCases {
    static final String FAMILY = "hf-to-gguf";

    private HfToGgufCases() {
    }

    /** {@code params.outtype}: the converter's --outtype ({@code auto} when the case gives none). */
    static String outtype(CorpusCase c) {
        return c.json().path("params").path("outtype").asText("auto");
    }

    static Optional<String> missing(CorpusCase c, Anamnesis amn) {
        if (amn.exporter("gguf").isEmpty()) return Optional.of("no installed exporter for gguf (module format-gguf)");
        // the Q8_0 outtype and quantizer targets need quant-gguf's encoders (issue 11): a missing one fails the case
        if (amn.readers().stream().noneMatch(r -> r.format().equals("safetensors"))) {
            return Optional.of("no installed reader for safetensors (module format-safetensors)");
        }
        return Optional.empty();
    }

    /** Through the API, with 2 threads and with 1: the expected file, and the same bytes. */
    static void api(CorpusCase c, Anamnesis amn) throws IOException {
        Path tmp = Files.createTempDirectory("amn-hf-gguf-");
        try {
            Path two = tmp.resolve("out-2.gguf"), one = tmp.resolve("out-1.gguf");
            amn.export(c.dir().resolve("input"), "gguf", outtype(c), true, ForgetOptions.defaults(), new LossMeter(), two,
                    WriteOptions.threads(2));
            compare(c, two);
            amn.export(c.dir().resolve("input"), "gguf", outtype(c), true, ForgetOptions.defaults(), new LossMeter(), one,
                    WriteOptions.threads(1));
            assertThat(Files.readAllBytes(one)).as(c.id() + ": 1 thread, the same bytes as 2").isEqualTo(Files.readAllBytes(two));
        } finally {
            delete(tmp);
        }
    }

    /** {@code params.amn_cli}, run with the case folder's input and a temporary output. */
    static void cli(CorpusCase c) throws IOException {
        Path tmp = Files.createTempDirectory("amn-hf-gguf-cli-");
        try {
            Path out = tmp.resolve("out.gguf");
            List<String> args = new ArrayList<>(Arrays.asList(c.json().path("params").path("amn_cli").asText().split(" ")));
            assertThat(args.removeFirst()).isEqualTo("amn");
            args.replaceAll(a -> a.equals("input/") ? c.dir().resolve("input").toString() : a.equals("out.gguf") ? out.toString() : a);
            args.add("--quiet");
            CorpusCliTest.Run run = CorpusCliTest.amn(args.toArray(String[]::new));
            assertThat(run.code()).as(c.id() + ": amn " + String.join(" ", args) + "\n" + run.err()).isZero();
            compare(c, out);
        } finally {
            delete(tmp);
        }
    }

    static void compare(CorpusCase c, Path actual) throws IOException {
        byte[] got = Files.readAllBytes(actual);
        byte[] want = Files.readAllBytes(c.dir().resolve("expected.gguf"));
        if (Arrays.equals(got, want)) return;
        ReferenceGguf g = ReferenceGguf.read(actual), w = ReferenceGguf.read(c.dir().resolve("expected.gguf"));
        assertThat(List.copyOf(g.kv.keySet())).as(c.id() + ": key order").isEqualTo(List.copyOf(w.kv.keySet()));
        for (String k : w.kv.keySet()) {
            assertThat(g.kv.get(k).type()).as(c.id() + ": type of " + k).isEqualTo(w.kv.get(k).type());
            assertThat(g.kv.get(k).value()).as(c.id() + ": value of " + k).isEqualTo(w.kv.get(k).value());
        }
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name).toList()).as(c.id() + ": tensor order")
                .isEqualTo(w.tensors.stream().map(ReferenceGguf.Tensor::name).toList());
        for (ReferenceGguf.Tensor t : w.tensors) {
            ReferenceGguf.Tensor mine = g.tensor(t.name());
            assertThat(mine.type()).as(c.id() + ": type of " + t.name()).isEqualTo(t.type());
            assertThat(mine.ne()).as(c.id() + ": ne of " + t.name()).isEqualTo(t.ne());
            int i = Arrays.mismatch(mine.bytes(), t.bytes());
            if (i >= 0) fail("%s: %s differs from byte %d of %d", c.id(), t.name(), i, t.bytes().length);
        }
        fail("%s: the same key/values and tensors, but the files differ (layout or padding) from byte %d",
                c.id(), Arrays.mismatch(got, want));
    }

    /** params.llama_run's tokens, comma-separated for llama_ref.py. */
    static String tokens(CorpusCase c) {
        List<String> t = new ArrayList<>();
        for (JsonNode n : c.json().path("params").path("llama_run").path("tokens")) t.add(n.asText());
        return String.join(",", t);
    }

    static void delete(Path tmp) throws IOException {
        try (var all = Files.walk(tmp)) {
            for (Path p : all.sorted((a, b) -> b.getNameCount() - a.getNameCount()).toList()) Files.deleteIfExists(p);
        }
    }
}
