package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A YaRN {@code rope_scaling} (Qwen2.5/Qwen3 long context, some llama-family models) to GGUF
 * on llama, qwen2 and qwen3, as the converter's {@code TextModel.set_gguf_parameters} writes
 * it: {@code rope.scaling.type} "yarn", {@code rope.scaling.factor} (float32),
 * {@code rope.scaling.original_context_length} (uint32) right after the head counts, then the
 * optional yarn keys in the converter's order, every other key and every tensor as without the
 * scaling; the inputs it would not take, or that llama.cpp would run otherwise than the model,
 * refused naming the key. With {@code AMN_TOKENIZER_QWEN3} (qwen) or the corpus's SentencePiece
 * {@code tokenizer.model} (llama) and the oracles ({@code ORACLE_CACHE}), llama.cpp's logits of
 * a converted file are checked against {@code bench/scripts/decoder_reference.py}'s forward
 * pass with Hugging Face's YaRN; skipped, saying so, without them.
 */
class YarnToGgufTest {
    static final String YARN = "{\"rope_type\": \"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 64}";
    /** GGUF value type ids. */
    static final int U32 = 4, F32 = 6, STRING = 8;
    @TempDir
    Path tmp;

    /** A tiny folder of {@code arch} with {@code rope} as its rope_scaling JSON ("null" for none). */
    private Path folder(String arch, String name, String rope) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        if (arch.equals("llama")) {
            Files.writeString(dir.resolve("config.json"), Llama3RopeToGgufTest.config(rope, ""));
            HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), Llama3RopeToGgufTest.tensors(3));
        } else {
            String config = QwenToGgufTest.config(arch, false);
            assertThat(config).contains("\"rope_scaling\": null");
            Files.writeString(dir.resolve("config.json"), config.replace("\"rope_scaling\": null", "\"rope_scaling\": " + rope));
            HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), QwenToGgufTest.tensors(arch, false, 3));
        }
        return dir;
    }

    private CorpusCliTest.Run convert(Path dir, Path out) {
        return CorpusCliTest.amn("convert", dir.toString(), "--to", "gguf", "--dtype", "f16", "-o", out.toString(), "-q", "--no-vocab");
    }

    private ReferenceGguf converted(Path dir) throws IOException {
        Path out = dir.resolveSibling(dir.getFileName() + ".gguf");
        CorpusCliTest.Run r = convert(dir, out);
        assertThat(r.code()).as(r.err()).isZero();
        return ReferenceGguf.read(out);
    }

    private static byte[] f32(float v) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(v).array();
    }

    private static byte[] u32(int v) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array();
    }

    private static Map<String, String> described(ReferenceGguf g) {
        Map<String, String> m = new LinkedHashMap<>();
        g.kv.forEach((k, v) -> m.put(k, v.type() + ":" + Arrays.toString(v.value())));
        return m;
    }

    /** The three keys after the head counts, of their types; every other key and tensor as without the scaling. */
    @ParameterizedTest
    @CsvSource({"llama", "qwen2", "qwen3"})
    void yarnIsTypeFactorAndOriginalContextAfterTheHeadCounts(String arch) throws IOException {
        // the same folder name: general.name and the other naming keys come from it
        ReferenceGguf with = converted(folder(arch, "scaled/" + arch + "-tiny", YARN));
        ReferenceGguf without = converted(folder(arch, "plain/" + arch + "-tiny", "null"));
        String p = arch + ".rope.scaling.";
        List<String> want = new ArrayList<>(without.kv.keySet());
        int at = want.indexOf(arch + ".attention.head_count_kv") + 1;
        assertThat(at).isPositive();
        want.addAll(at, List.of(p + "type", p + "factor", p + "original_context_length"));
        assertThat(new ArrayList<>(with.kv.keySet())).containsExactlyElementsOf(want);
        assertThat(with.kv.get(p + "type").type()).isEqualTo(STRING);
        assertThat(with.kv.get(p + "type").asString()).isEqualTo("yarn");
        assertThat(with.kv.get(p + "factor").type()).isEqualTo(F32);
        assertThat(with.kv.get(p + "factor").value()).isEqualTo(f32(4f));
        assertThat(with.kv.get(p + "original_context_length").type()).isEqualTo(U32);
        assertThat(with.kv.get(p + "original_context_length").value()).isEqualTo(u32(64));
        Map<String, String> a = described(with), b = described(without);
        a.keySet().removeIf(k -> k.startsWith(p));
        assertThat(a).isEqualTo(b);
        assertThat(with.tensors).hasSameSizeAs(without.tensors);
        for (int i = 0; i < without.tensors.size(); i++) {
            ReferenceGguf.Tensor x = with.tensors.get(i), y = without.tensors.get(i);
            assertThat(x.name()).isEqualTo(y.name());
            assertThat(x.type()).isEqualTo(y.type());
            assertThat(x.bytes()).as(x.name()).isEqualTo(y.bytes());
        }
    }

    /**
     * The optional keys, each written when given (as llama.cpp's own values: it does not read
     * them for these families), in the converter's order whatever config.json's: extrapolation,
     * attention factor, beta_fast, beta_slow; "type" for "rope_type"; rope_parameters for
     * rope_scaling; an integer factor as float32.
     */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "rope_scaling|{\"beta_slow\": 1.0, \"beta_fast\": 32, \"attention_factor\": 1.1386294361119891, "
                    + "\"extrapolation_factor\": 1.0, \"original_max_position_embeddings\": 64, \"factor\": 4, \"type\": \"yarn\"}"
                    + "|yarn_ext_factor,yarn_attn_factor,yarn_beta_fast,yarn_beta_slow",
            "rope_scaling|{\"type\": \"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 64, \"attn_factor\": 1.1386294}"
                    + "|yarn_attn_factor",
            "rope_parameters|{\"rope_type\": \"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 64, "
                    + "\"rope_theta\": 1000000.0, \"beta_fast\": 32.0}|yarn_beta_fast"})
    void optionalKeysAreWrittenInTheConvertersOrder(String container, String rope, String optional) throws IOException {
        String config = QwenToGgufTest.config("qwen3", false).replace("\"rope_scaling\": null", "\"" + container + "\": " + rope);
        Path dir = Files.createDirectories(tmp.resolve("qwen3-opt"));
        Files.writeString(dir.resolve("config.json"), config);
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), QwenToGgufTest.tensors("qwen3", false, 3));
        ReferenceGguf g = converted(dir);
        List<String> scaling = g.kv.keySet().stream().filter(k -> k.startsWith("qwen3.rope.scaling.")).toList();
        List<String> want = new ArrayList<>(List.of("qwen3.rope.scaling.type", "qwen3.rope.scaling.factor",
                "qwen3.rope.scaling.original_context_length"));
        for (String o : optional.split(",")) want.add("qwen3.rope.scaling." + o);
        assertThat(scaling).containsExactlyElementsOf(want);
        List<String> keys = new ArrayList<>(g.kv.keySet());
        assertThat(keys.indexOf("qwen3.rope.scaling.type")).isEqualTo(keys.indexOf("qwen3.attention.head_count_kv") + 1);
        assertThat(keys.indexOf("qwen3.rope.freq_base")).isEqualTo(keys.indexOf(want.getLast()) + 1);
        assertThat(g.kv.get("qwen3.rope.scaling.factor").value()).isEqualTo(f32(4f));
        for (String o : optional.split(",")) assertThat(g.kv.get("qwen3.rope.scaling." + o).type()).as(o).isEqualTo(F32);
        if (optional.contains("yarn_attn_factor")) {
            assertThat(g.kv.get("qwen3.rope.scaling.yarn_attn_factor").value()).isEqualTo(f32((float) (0.1 * Math.log(4) + 1)));
        }
        if (optional.contains("yarn_beta_fast")) assertThat(g.kv.get("qwen3.rope.scaling.yarn_beta_fast").value()).isEqualTo(f32(32f));
        assertThat(g.kv.get("qwen3.rope.freq_base").value()).isEqualTo(f32(1e6f));
    }

    /** Exit 3: a value the converter could not write; exit 6: one llama.cpp would run otherwise than the model. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"factor\": 4.0|\"factor\": \"4\"|3|rope_scaling factor",
            "\"factor\": 4.0|\"factor\": -4.0|3|rope_scaling factor",
            "\"factor\": 4.0|\"factor\": 0|3|rope_scaling factor",
            "\"factor\": 4.0|\"factor\": null|6|rope_scaling factor",
            "\"factor\": 4.0|\"factor\": 0.5|6|rope_scaling factor",
            "\"original_max_position_embeddings\": 64|\"original_max_position_embeddings\": 64.5|3|rope_scaling original_max_position_embeddings",
            "\"original_max_position_embeddings\": 64|\"original_max_position_embeddings\": -64|3|rope_scaling original_max_position_embeddings",
            "\"original_max_position_embeddings\": 64|\"original_max_position_embeddings\": 4294967296|3|rope_scaling original_max_position_embeddings",
            "\"original_max_position_embeddings\": 64|\"original_max_position_embeddings\": null|3|rope_scaling original_max_position_embeddings",
            "\"original_max_position_embeddings\": 64|\"original_max_position_embeddings\": 64, \"beta_fast\": 16|6|rope_scaling beta_fast",
            "\"original_max_position_embeddings\": 64|\"original_max_position_embeddings\": 64, \"beta_slow\": 2.0|6|rope_scaling beta_slow",
            "\"original_max_position_embeddings\": 64|\"original_max_position_embeddings\": 64, \"beta_slow\": \"1\"|3|rope_scaling beta_slow",
            "\"original_max_position_embeddings\": 64|\"original_max_position_embeddings\": 64, \"extrapolation_factor\": 0.5|6|rope_scaling extrapolation_factor",
            "\"original_max_position_embeddings\": 64|\"original_max_position_embeddings\": 64, \"attention_factor\": 1.0|6|rope_scaling attention_factor",
            "\"original_max_position_embeddings\": 64|\"original_max_position_embeddings\": 64, \"attn_factor\": 2.0|6|rope_scaling attn_factor",
            "\"original_max_position_embeddings\": 64|\"original_max_position_embeddings\": 64, \"mscale\": 0.707, \"mscale_all_dim\": 1.0|6|rope_scaling mscale",
            "\"original_max_position_embeddings\": 64|\"original_max_position_embeddings\": 64, \"truncate\": false|6|rope_scaling truncate"})
    void aBadParameterIsRefusedNamingIt(String from, String to, int exit, String named) throws IOException {
        assertThat(YARN).contains(from);
        for (String arch : List.of("llama", "qwen2")) {
            Path dir = folder(arch, "bad-" + arch, YARN.replace(from, to));
            Path out = tmp.resolve("out-" + arch + ".gguf");
            CorpusCliTest.Run r = convert(dir, out);
            assertThat(r.code()).as(r.err()).isEqualTo(exit);
            assertThat(r.err()).contains("config.json " + named);
            assertThat(Files.exists(out)).as("no half-written output").isFalse();
        }
    }

    /** mscale and mscale_all_dim that give transformers' default attention factor (equal, or one of them 0) are taken. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {"\"mscale\": 1.0, \"mscale_all_dim\": 0", "\"mscale_all_dim\": 0.707"})
    void mscalesTransformersIgnoresAreTaken(String mscales) throws IOException {
        ReferenceGguf g = converted(folder("qwen2", "mscale", YARN.replace("\"factor\": 4.0", "\"factor\": 4.0, " + mscales)));
        assertThat(g.kv.keySet().stream().filter(k -> k.startsWith("qwen2.rope.scaling.")).toList())
                .containsExactly("qwen2.rope.scaling.type", "qwen2.rope.scaling.factor", "qwen2.rope.scaling.original_context_length");
    }

    /** Families whose keys are not TextModel's yarn branch (here gemma) still refuse it. */
    @Test
    void gemmaWithYarnIsRefused() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("gemma"));
        Files.writeString(dir.resolve("config.json"), GemmaToGgufTest.config("gemma").replace("\"rope_theta\"",
                "\"rope_scaling\": " + YARN + ", \"rope_theta\""));
        assertThat(Files.readString(dir.resolve("config.json"))).contains("yarn");
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), GemmaToGgufTest.tensors("gemma", "F32", false, 3));
        CorpusCliTest.Run r = convert(dir, tmp.resolve("out.gguf"));
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("yarn");
    }

    /** 160 tokens, all below 512 (the llama folder's SentencePiece vocabulary) and Qwen's: original context 64 is passed early. */
    static final String TOKENS;

    static {
        java.util.Random r = new java.util.Random(5);
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < 160; i++) b.append(i == 0 ? "" : ",").append(3 + r.nextInt(500));
        TOKENS = b.toString();
    }

    /**
     * llama.cpp's logits of the converted F32 file = the forward pass with Hugging Face's YaRN
     * (factor 4, original context 64, llama.cpp's F16 KV cache modelled): within 1e-4 of the
     * largest logit (docs/hf-to-gguf.md gives the observed numbers), the same argmax. The same
     * forward pass without the scaling is more than 0.1 of the largest logit off, and without
     * YaRN's attention factor 0.1 ln(4) + 1 more than 0.05.
     */
    @ParameterizedTest
    @CsvSource({"llama", "qwen2", "qwen3"})
    void llamaCppComputesHuggingFacesYarn(String arch) throws Exception {
        List<String> tokenizer;
        if (arch.equals("llama")) {
            Optional<Path> sp = DecoderReference.sentencePiece();
            Assumptions.assumeTrue(sp.isPresent(), "the corpus-hf SentencePiece tokenizer.model not found: not checked");
            tokenizer = List.of("--sp", sp.get().toString());
        } else {
            Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
            Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
            tokenizer = List.of("--tokenizer", tok.get().toString());
        }
        Path oracles = DecoderReference.oracles();
        Path script = DecoderReference.SCRIPT;

        Path dir = tmp.resolve(arch + "-yarn");
        List<String> make = new ArrayList<>(List.of("python3", script.toString(), "make", arch, dir.toString(), "--yarn", "64",
                "--seed", "7", "--theta", "10000"));
        make.addAll(tokenizer);
        run(make);
        Path out = tmp.resolve(arch + "-yarn-f32.gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", dir.toString(), "--to", "gguf", "--dtype", "f32", "-o", out.toString(), "-q");
        assertThat(r.code()).as(r.err()).isZero();
        List<String> compare = List.of("python3", script.toString(), "compare", dir.toString(), out.toString(), oracles.toString(),
                "--weights", "f32", "--tokens", TOKENS);
        JsonNode cmp = LlamaRunOracleTest.JSON.readTree(run(compare));
        JsonNode f16cache = cmp.path("kv_f16");
        assertThat(f16cache.path("argmax").asInt()).as(cmp.toString()).isEqualTo(cmp.path("llama_argmax").asInt());
        assertThat(f16cache.path("max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(1e-4);

        List<String> unscaled = new ArrayList<>(compare);
        unscaled.add("--no-rope-scaling");
        JsonNode off = LlamaRunOracleTest.JSON.readTree(run(unscaled));
        assertThat(off.path("kv_f16").path("max_rel_diff").asDouble()).as("without the scaling: " + off).isGreaterThan(0.1);
        List<String> noMscale = new ArrayList<>(compare);
        noMscale.addAll(List.of("--mutate", "no-attn-factor"));
        JsonNode flat = LlamaRunOracleTest.JSON.readTree(run(noMscale));
        assertThat(flat.path("kv_f16").path("max_rel_diff").asDouble()).as("without the attention factor: " + flat).isGreaterThan(0.05);
    }

    private String run(List<String> cmd) throws Exception {
        return DecoderReference.run(tmp, cmd);
    }
}
