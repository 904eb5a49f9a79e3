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
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static io.anamnesis.corpus.Phi3ToGgufTest.HEAD;
import static io.anamnesis.corpus.Phi3ToGgufTest.HEADS;
import static io.anamnesis.corpus.Phi3ToGgufTest.KV_HEADS;
import static io.anamnesis.corpus.Phi3ToGgufTest.FF;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A 128k Phi-3's rope scaling ({@code rope_scaling} longrope, older su: Phi-3.5-mini,
 * Phi-3-medium-128k, Phi-4-mini) to GGUF, as {@code Phi3MiniModel.generate_extra_tensors}
 * writes it: {@code rope_factors_long.weight} then {@code rope_factors_short.weight}, F32, one
 * factor per rotary pair, the first tensors of the file; {@code phi3.rope.scaling.attn_factor}
 * right after {@code general.architecture}; the bad inputs. llama.cpp's logits
 * ({@code ORACLE_CACHE}) are checked against {@code bench/scripts/decoder_reference.py}'s
 * forward pass of the longrope as Hugging Face computes it, on both sides of the original
 * context; skipped, saying so, without the oracle or the corpus tokenizer.
 */
class Phi3LongRopeToGgufTest {
    private static final int PAIRS = HEAD / 2;
    @TempDir
    Path tmp;

    /** Factors that are not float32 numbers, so that the float32 rounding shows. */
    static double[] factors(long seed, int n, double top) {
        Random r = new Random(seed);
        double[] out = new double[n];
        for (int i = 0; i < n; i++) out[i] = 1 + (top - 1) * i / Math.max(1, n - 1) + r.nextDouble() * 1e-3 + 0.1;
        return out;
    }

    private static String list(double[] v) {
        List<String> s = new ArrayList<>();
        for (double d : v) s.add(Double.toString(d));
        return "[" + String.join(", ", s) + "]";
    }

    private static String scaling(String typeKey, String type, double[] longF, double[] shortF) {
        return "{\"" + typeKey + "\": \"" + type + "\", \"long_factor\": " + list(longF) + ", \"short_factor\": " + list(shortF) + "}";
    }

    private Path folder(String name, String scaling, long maxPositions) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        Files.writeString(dir.resolve("config.json"), Phi3ToGgufTest.config("").replace("\"rope_scaling\": null",
                "\"rope_scaling\": " + scaling).replace("\"max_position_embeddings\": 4096", "\"max_position_embeddings\": "
                + maxPositions));
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), Phi3ToGgufTest.tensors(name.hashCode(),
                (HEADS + 2 * KV_HEADS) * HEAD, 2 * FF));
        return dir;
    }

    private ReferenceGguf converted(Path dir, String dtype) throws IOException {
        return DecoderReference.converted(dir, dtype, false, tmp);
    }

    private static byte[] f32(double[] v) {
        ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (double d : v) b.putFloat((float) d);
        return b.array();
    }

    /**
     * The two tensors first, long then short, F32 in every output type, the config's numbers
     * rounded to float32; the attention factor after general.architecture, the rest of the
     * keys as a 4k Phi-3's; the parameter count includes the factors.
     */
    @ParameterizedTest
    @CsvSource({"type,longrope,f16", "rope_type,longrope,bf16", "type,su,q8_0", "type,LongRoPE,f32"})
    void factorsFirstAndTheAttentionFactorAfterTheArchitecture(String typeKey, String type, String dtype) throws IOException {
        double[] longF = factors(1, PAIRS, 47.77), shortF = factors(2, PAIRS, 1.08);
        ReferenceGguf g = converted(folder("Phi-3-tiny-128k", scaling(typeKey, type, longF, shortF), 131072), dtype);
        assertThat(g.tensors.get(0).name()).isEqualTo("rope_factors_long.weight");
        assertThat(g.tensors.get(1).name()).isEqualTo("rope_factors_short.weight");
        assertThat(g.tensors.stream().filter(t -> t.name().startsWith("rope_")).count()).as("one pair for all layers").isEqualTo(2);
        for (int i = 0; i < 2; i++) {
            ReferenceGguf.Tensor t = g.tensors.get(i);
            assertThat(t.type()).as(t.name() + " F32").isZero();
            assertThat(t.ne()).as(t.name() + ": rope_dims / 2").containsExactly(PAIRS);
            assertThat(t.bytes()).as(t.name()).isEqualTo(f32(i == 0 ? longF : shortF));
        }
        List<String> keys = new ArrayList<>(g.kv.keySet());
        assertThat(keys.subList(0, 3)).containsExactly("general.architecture", "phi3.rope.scaling.attn_factor", "general.type");
        ReferenceGguf.Kv attn = g.kv.get("phi3.rope.scaling.attn_factor");
        assertThat(attn.type()).as("float32").isEqualTo(6);
        // sqrt(1 + ln(131072 / 4096) / ln(4096)) = sqrt(17/12), as Python computes it, to float32
        assertThat(attn.asLong()).isEqualTo(0x3f9859b9L);
        assertThat(keys.subList(keys.indexOf("phi3.context_length"), keys.size())).containsExactly("phi3.context_length",
                "phi3.rope.scaling.original_context_length", "phi3.embedding_length", "phi3.feed_forward_length",
                "phi3.block_count", "phi3.attention.head_count", "phi3.attention.head_count_kv",
                "phi3.attention.layer_norm_rms_epsilon", "phi3.rope.dimension_count", "phi3.rope.freq_base",
                "general.file_type", "phi3.attention.sliding_window", "general.quantization_version", "tokenizer.ggml.model");
        assertThat(g.kv.get("phi3.context_length").asLong()).isEqualTo(131072);
        assertThat(g.kv).doesNotContainKeys("phi3.rope.scaling.type", "phi3.rope.scaling.factor");
        assertThat(g.tensors).hasSize(2 + 3 + 6 * Phi3ToGgufTest.LAYERS);
    }

    /** A scale of 1 or less (max_position_embeddings not above the original) gives the factor 1; partial rotary, fewer pairs. */
    @Test
    void noLongerContextGivesAttentionFactorOneAndPartialRotaryFewerPairs() throws IOException {
        ReferenceGguf g = converted(folder("phi3-4k-longrope", scaling("type", "longrope", factors(3, PAIRS, 4),
                factors(4, PAIRS, 1.5)), 4096), "f32");
        assertThat(g.kv.get("phi3.rope.scaling.attn_factor").asLong()).isEqualTo(Float.floatToIntBits(1f));
        Path dir = folder("phi3-partial-longrope", scaling("type", "longrope", factors(5, 3, 4), factors(6, 3, 1.5)), 262144);
        Files.writeString(dir.resolve("config.json"), Files.readString(dir.resolve("config.json"))
                .replace("\"rope_scaling\":", "\"partial_rotary_factor\": 0.75, \"rope_scaling\":"));
        ReferenceGguf p = converted(dir, "f16");
        assertThat(p.kv.get("phi3.rope.dimension_count").asLong()).isEqualTo(6);
        assertThat(p.tensor("rope_factors_long.weight").ne()).containsExactly(3);
        // sqrt(1 + ln(64) / ln(4096)) = sqrt(1.5)
        assertThat(p.kv.get("phi3.rope.scaling.attn_factor").asLong()).isEqualTo(0x3f9cc471L);
    }

    /** Wrong factor counts, missing lists, no type, bad numbers: malformed (exit 3), naming the key; nothing written. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "long-short|{\"type\": \"longrope\", \"long_factor\": [1, 2, 3], \"short_factor\": [1, 1, 1, 1]}|rope_scaling long_factor has 3 factors, not the 4",
            "short-long|{\"type\": \"longrope\", \"long_factor\": [1, 2, 3, 4], \"short_factor\": [1, 1, 1, 1, 1, 1, 1, 1]}|rope_scaling short_factor has 8 factors, not the 4",
            "no-short|{\"type\": \"longrope\", \"long_factor\": [1, 2, 3, 4]}|rope_scaling short_factor is missing",
            "not-list|{\"type\": \"su\", \"long_factor\": 2.0, \"short_factor\": [1, 1, 1, 1]}|rope_scaling long_factor is not a list",
            "no-type|{\"long_factor\": [1, 2, 3, 4], \"short_factor\": [1, 1, 1, 1]}|rope_scaling has no type",
            "zero|{\"type\": \"longrope\", \"long_factor\": [1, 2, 0, 4], \"short_factor\": [1, 1, 1, 1]}|rope_scaling long_factor holds 0",
            "text|{\"type\": \"longrope\", \"long_factor\": [1, 2, 3, 4], \"short_factor\": [1, \"x\", 1, 1]}|rope_scaling short_factor holds x"})
    void badFactorsAreMalformedNamingTheKey(String name, String scaling, String message) throws IOException {
        Path dir = folder("phi3-bad-" + name, scaling, 131072);
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("config.json " + message);
        assertThat(Files.exists(tmp.resolve("out.gguf"))).as("no half-written output").isFalse();
    }

    /** Other types stay refused (exit 6): yarn, an unknown type, longrope in rope_parameters, a differing attention_factor. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "yarn|rope_scaling|{\"type\": \"yarn\", \"long_factor\": [1, 2, 3, 4], \"short_factor\": [1, 1, 1, 1]}|type yarn",
            "dynamic|rope_scaling|{\"type\": \"dynamic\", \"factor\": 2.0}|type dynamic",
            "params|rope_parameters|{\"rope_type\": \"longrope\", \"long_factor\": [1, 2, 3, 4], \"short_factor\": [1, 1, 1, 1], \"rope_theta\": 10000.0}|rope_parameters",
            "attn|rope_scaling|{\"type\": \"longrope\", \"long_factor\": [1, 2, 3, 4], \"short_factor\": [1, 1, 1, 1], \"attention_factor\": 1.0}|attention_factor 1.0"})
    void otherScalingsAreRefused(String name, String where, String scaling, String message) throws IOException {
        Path dir = folder("phi3-refused-" + name, where.equals("rope_scaling") ? scaling : "null", 131072);
        if (!where.equals("rope_scaling")) {
            Files.writeString(dir.resolve("config.json"), Files.readString(dir.resolve("config.json"))
                    .replace("\"rope_scaling\": null,", "\"rope_parameters\": " + scaling + ","));
        }
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains(message);
        assertThat(Files.exists(tmp.resolve("out.gguf"))).isFalse();
    }

    private static Optional<Path> sentencePiece() {
        return DecoderReference.sentencePiece();
    }

    /**
     * llama.cpp's logits of our conversion of a tiny 128k-style Phi-3 (original context 256,
     * max_position_embeddings 8192, long factors up to 40) = the reference forward pass with
     * Hugging Face's longrope. llama.cpp takes the long factors when its context exceeds the
     * original one, Hugging Face when the sequence does; llama_ref.py runs a context of at
     * least the sequence length (padded by llama.cpp to 256), so 12 tokens run short factors on
     * both sides and 300 tokens long ones. Measured (F16 KV cache modelled), of the largest
     * logit: F32 3.4e-7 and 1.7e-7 (12 tokens, full and 0.75 rotary), 3.0e-5 and 1.5e-4 (300),
     * F16 6.1e-4 (12); the reference with the other factor list differs by 0.16-0.22 (12) and
     * 0.74-1.1 (300), without the attention factor by 0.21-0.41, without any scaling by
     * 0.22-0.94.
     */
    @ParameterizedTest
    @CsvSource({"f32,1.0,12", "f32,1.0,300", "f16,0.75,12", "f32,0.75,300"})
    void llamaCppComputesHuggingFacesLongRope(String dtype, String partial, int length) throws Exception {
        Assumptions.assumeTrue(sentencePiece().isPresent(), "the corpus's hf-to-gguf tokenizer.model is not there: not checked");
        Path oracles = DecoderReference.oracles();
        Path script = DecoderReference.SCRIPT;

        Path dir = tmp.resolve("phi3-longrope-forward");
        run(List.of("python3", script.toString(), "make", "phi3", dir.toString(), "--sp-tokenizer", sentencePiece().get().toString(),
                "--partial-rotary", partial, "--longrope", "256", "--seed", "7"));
        Path out = tmp.resolve("phi3-longrope-" + dtype + ".gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, dtype, out, true);
        assertThat(r.code()).as(r.err()).isZero();
        Random random = new Random(length);
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < length; i++) tokens.add(Integer.toString(3 + random.nextInt(380)));
        String toks = String.join(",", tokens);
        JsonNode cmp = compare(script, dir, out, oracles, dtype, toks, null);
        JsonNode f16cache = cmp.path("kv_f16");
        assertThat(f16cache.path("argmax").asInt()).as(cmp.toString()).isEqualTo(cmp.path("llama_argmax").asInt());
        double tolerance = dtype.equals("f32") ? (length > 256 ? 1e-3 : 1e-4) : 5e-3;
        assertThat(f16cache.path("max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(tolerance);
        JsonNode swapped = compare(script, dir, out, oracles, dtype, toks, "swap-factors");
        assertThat(swapped.path("kv_f16").path("max_rel_diff").asDouble()).as("the other factors are caught: " + swapped)
                .isGreaterThan(0.03);
    }

    private JsonNode compare(Path script, Path dir, Path out, Path oracles, String dtype, String toks, String mutate) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("python3", script.toString(), "compare", dir.toString(), out.toString(),
                oracles.toString(), "--weights", dtype, "--tokens", toks));
        if (mutate != null) cmd.addAll(List.of("--mutate", mutate));
        return LlamaRunOracleTest.JSON.readTree(run(cmd));
    }

    private String run(List<String> cmd) throws Exception {
        return DecoderReference.run(tmp, cmd);
    }
}
