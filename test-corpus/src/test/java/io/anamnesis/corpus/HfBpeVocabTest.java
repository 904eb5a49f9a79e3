package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A llama folder whose vocabulary is a tokenizer.json (byte-level BPE, no tokenizer.model),
 * through the CLI: an unknown pre-tokenizer stops as the converter does; Llama 3's real
 * tokenizer.json gives a GGUF llama.cpp loads and tokenizes as transformers.js does. The
 * folder is the corpus' {@code gen-bf16-to-bf16/input} with its tokenizer replaced and its
 * vocabulary-sized tensors regrown; the real tokenizer is the folder named by
 * {@code AMN_TOKENIZER_LLAMA3} (see format-gguf's RealTokenizersTest), llama.cpp the oracles'
 * ({@code ORACLE_CACHE}). Each part is skipped, saying so, without what it needs.
 */
class HfBpeVocabTest {
    @TempDir
    Path tmp;
    private Path base;

    @BeforeEach
    void setUp() throws IOException {
        Path hf = CorpusCase.hfRoot().orElse(null);
        Assumptions.assumeTrue(hf != null, "shared corpus-hf not found: the model folder these tests start from is missing");
        base = hf.resolve("hf-to-gguf/gen-bf16-to-bf16");
    }

    /** The case's input with tokenizer.json/tokenizer_config.json for tokenizer.model, {@code vocab} rows of embeddings. */
    private Path folder(String name, String tokenizer, String tokenizerConfig, int vocab) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name).resolve("model"));
        try (var files = Files.list(base.resolve("input"))) {
            for (Path f : files.toList()) {
                String n = f.getFileName().toString();
                if (!n.startsWith("tokenizer") && !n.equals("model.safetensors")) Files.copy(f, dir.resolve(n));
            }
        }
        Files.writeString(dir.resolve("tokenizer.json"), tokenizer);
        Files.writeString(dir.resolve("tokenizer_config.json"), tokenizerConfig);
        String config = Files.readString(dir.resolve("config.json"));
        Files.writeString(dir.resolve("config.json"), config.replace("\"vocab_size\": 320", "\"vocab_size\": " + vocab));
        Map<String, ReferenceSafetensors.Tensor> tensors = new LinkedHashMap<>(ReferenceSafetensors.read(base.resolve("input/model.safetensors")));
        Random random = new Random(17);
        for (String n : List.of("model.embed_tokens.weight", "lm_head.weight")) {
            long[] shape = {vocab, tensors.get(n).shape()[1]};
            byte[] bf16 = new byte[(int) (shape[0] * shape[1] * 2)];
            for (int i = 0; i < bf16.length; i += 2) {
                int bits = Float.floatToIntBits((float) random.nextGaussian() * 0.02f) >>> 16;
                bf16[i] = (byte) bits;
                bf16[i + 1] = (byte) (bits >>> 8);
            }
            tensors.put(n, new ReferenceSafetensors.Tensor("BF16", shape, bf16));
        }
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), tensors);
        return dir;
    }

    @Test
    void unknownPreTokenizerIsUnsupportedNamingItsHash() throws IOException {
        String tokenizer = """
                {"added_tokens": [{"id": 3, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
                   "normalized": false, "special": true}],
                 "normalizer": null, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
                 "post_processor": null, "decoder": {"type": "ByteLevel"},
                 "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}""";
        Path dir = folder("unknown", tokenizer, "{\"bos_token\": \"<s>\"}", 4);
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", dir.toString(), "--to", "gguf", "-o", tmp.resolve("out.gguf").toString(), "-q");
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("check hash").contains("--no-vocab");
        assertThat(Files.exists(tmp.resolve("out.gguf"))).as("no half-written output").isFalse();

        CorpusCliTest.Run bad = CorpusCliTest.amn("convert", folder("bad", "{\"model\": {\"type\": \"BPE\"", "{}", 4).toString(),
                "--to", "gguf", "-o", tmp.resolve("bad.gguf").toString(), "-q");
        assertThat(bad.code()).as(bad.err()).isEqualTo(3);
        assertThat(bad.err()).contains("tokenizer.json");
    }

    /**
     * Llama 3's tokenizer.json: the converter's name for its pre-tokenizer (llama-bpe with the
     * BOS post-processor of Meta's current file, smaug-bpe with the older file npm ships),
     * llama.cpp loads the GGUF and its tokenizer gives transformers.js's ids.
     */
    @Test
    void llama3FolderLoadsInLlamaCppAndTokenizesAsTransformersJs() throws Exception {
        String dir = System.getenv("AMN_TOKENIZER_LLAMA3");
        Assumptions.assumeTrue(dir != null && Files.isRegularFile(Path.of(dir, "tokenizer.json")),
                "AMN_TOKENIZER_LLAMA3 does not name a folder with Llama 3's tokenizer.json: not checked");
        String tokenizer = Files.readString(Path.of(dir, "tokenizer.json"));
        Path model = folder("llama3", tokenizer, Files.readString(Path.of(dir, "tokenizer_config.json")), 128256);
        Path out = tmp.resolve("llama3.gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", model.toString(), "--to", "gguf", "-o", out.toString(), "-q");
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("tokenizer.ggml.model").asString()).isEqualTo("gpt2");
        boolean bos = tokenizer.contains("\"TemplateProcessing\"");
        assertThat(g.kv.get("tokenizer.ggml.pre").asString()).isEqualTo(bos ? "llama-bpe" : "smaug-bpe");

        Path script = base.getParent().getParent().getParent().resolve("tools/oracles/llama_ref.py");
        Optional<String> oracle = LlamaRunOracleTest.oracleMissing(script);
        Assumptions.assumeTrue(oracle.isEmpty(), () -> "llama.cpp oracle skipped: " + oracle.orElse(""));
        Process run = new ProcessBuilder("python3", script.toString(), "run", out.toString(), "--tokens", "128000,9906,11,1917")
                .redirectError(tmp.resolve("err.txt").toFile()).start();
        JsonNode loaded = LlamaRunOracleTest.JSON.readTree(run.getInputStream().readAllBytes());
        assertThat(run.waitFor(300, TimeUnit.SECONDS)).isTrue();
        assertThat(loaded.path("ok").asBoolean()).as("llama.cpp loads it: " + loaded + Files.readString(tmp.resolve("err.txt"))).isTrue();

        Path tokenize = Path.of("..", "bench", "scripts", "llama_tokenize.py").toAbsolutePath().normalize();
        Assumptions.assumeTrue(Files.isRegularFile(tokenize), tokenize + " not found: llama.cpp's tokenizer is not checked");
        Process p = new ProcessBuilder("python3", tokenize.toString(), script.getParent().toString(), out.toString())
                .redirectError(tmp.resolve("err2.txt").toFile()).start();
        p.getOutputStream().write(LlamaRunOracleTest.JSON.writeValueAsBytes(TEXTS));
        p.getOutputStream().close();
        String ids = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(300, TimeUnit.SECONDS) && p.exitValue() == 0).as(ids + Files.readString(tmp.resolve("err2.txt"))).isTrue();
        List<List<Integer>> got = LlamaRunOracleTest.JSON.readValue(ids,
                LlamaRunOracleTest.JSON.getTypeFactory().constructCollectionType(List.class,
                        LlamaRunOracleTest.JSON.getTypeFactory().constructCollectionType(List.class, Integer.class)));
        for (int i = 0; i < TEXTS.size(); i++) {
            List<Integer> want = bos ? prepend(IDS.get(i)) : IDS.get(i);
            assertThat(got.get(i)).as("llama.cpp's ids of " + TEXTS.get(i)).isEqualTo(want);
        }
    }

    private static List<Integer> prepend(List<Integer> ids) {
        List<Integer> out = new java.util.ArrayList<>(List.of(128000));
        out.addAll(ids);
        return out;
    }

    /** Strings and the ids transformers.js (@lenml/tokenizers 3.7.2) gives with Llama 3's tokenizer.json, no special tokens. */
    static final List<String> TEXTS = List.of(
            "Hello, world! It's 2024-05-01: na\u00efve caf\u00e9, \u00dcn\u00efc\u00f6d\u00e9 \u00df.",
            "   leading and   runs\t\ttabs\n\n\nnewlines  ",
            "don't WE'LL they'RE I'M you'D",
            "<|begin_of_text|>special<|eot_id|> inline");
    static final List<List<Integer>> IDS = List.of(
            List.of(9906, 11, 1917, 0, 1102, 596, 220, 2366, 19, 12, 2304, 12, 1721, 25, 95980, 588,
                    53050, 11, 105766, 38672, 66, 3029, 67, 978, 1717, 253, 13),
            List.of(256, 6522, 323, 256, 8640, 197, 3324, 3518, 1432, 943, 8128, 256),
            List.of(15357, 956, 20255, 6, 4178, 814, 95253, 358, 28703, 499, 28805),
            List.of(128000, 15495, 128009, 7533));
}
