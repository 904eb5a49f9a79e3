package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Qwen3MoeForCausalLM and MixtralForCausalLM folders to GGUF, as convert_hf_to_gguf.py's
 * {@code Qwen3MoeModel} and {@code LlamaModel} write them (Qwen3-MoE: each block's experts stacked per projection into {@code ffn_down_exps},
 * {@code ffn_gate_exps}, {@code ffn_up_exps} (that order, where the block's last expert comes),
 * the router {@code ffn_gate_inp} kept F32, TextModel's keys with {@code expert_count} and
 * {@code expert_used_count}, then {@code expert_feed_forward_length}; Mixtral: w1, w2, w3 as
 * gate, down, up in llama's keys); the bad inputs. The
 * folders are made here, tiny and random, and every expected byte is worked out from them;
 * with the oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3})
 * llama.cpp's logits of the converted files are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass, skipped, saying so, without them.
 */
class MoeToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, LAYERS = 2, HEADS = 4, KV_HEADS = 2, HEAD_DIM = 16, EXPERTS = 4, USED = 2,
            EXPERT_FF = 32;
    static final List<String> PROJECTIONS = List.of("down_proj", "gate_proj", "up_proj");
    @TempDir
    Path tmp;

    static String config() {
        return "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"model_type\": \"qwen3_moe\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": 96, \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", \"head_dim\": " + HEAD_DIM + ", "
                + "\"num_experts\": " + EXPERTS + ", \"num_experts_per_tok\": " + USED + ", \"moe_intermediate_size\": " + EXPERT_FF
                + ", \"norm_topk_prob\": true, \"decoder_sparse_step\": 1, \"mlp_only_layers\": [], "
                + "\"max_position_embeddings\": 2048, \"rms_norm_eps\": 1e-06, \"rope_theta\": 1000000.0, "
                + "\"rope_scaling\": null, \"tie_word_embeddings\": false, \"torch_dtype\": \"float32\"}";
    }

    static String expert(int layer, int x, String proj) {
        return "model.layers." + layer + ".mlp.experts." + x + "." + proj + ".weight";
    }

    /** A tiny random Qwen3-MoE as F32, in name order. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed) {
        Random random = new Random(seed);
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "self_attn.q_proj.weight", new long[]{HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.k_proj.weight", new long[]{KV_HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.v_proj.weight", new long[]{KV_HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, HEADS * HEAD_DIM});
            shapes.put(p + "self_attn.q_norm.weight", new long[]{HEAD_DIM});
            shapes.put(p + "self_attn.k_norm.weight", new long[]{HEAD_DIM});
            shapes.put(p + "mlp.gate.weight", new long[]{EXPERTS, HIDDEN});
            for (int x = 0; x < EXPERTS; x++) {
                shapes.put(expert(i, x, "gate_proj"), new long[]{EXPERT_FF, HIDDEN});
                shapes.put(expert(i, x, "up_proj"), new long[]{EXPERT_FF, HIDDEN});
                shapes.put(expert(i, x, "down_proj"), new long[]{HIDDEN, EXPERT_FF});
            }
        }
        return DecoderReference.randomF32(shapes, random);
    }

    private Path folder(String name, Map<String, ReferenceSafetensors.Tensor> tensors, String config) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        Files.writeString(dir.resolve("config.json"), config);
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), tensors);
        return dir;
    }

    private Path folder(String name) throws IOException {
        return folder(name, tensors(name.hashCode()), config());
    }

    private ReferenceGguf converted(Path dir, String dtype) throws IOException {
        return DecoderReference.converted(dir, dtype, false, tmp);
    }

    /** Experts 0.. of one projection of one block, their stored F32 bytes one after another (torch.stack, dim 0). */
    private static byte[] stack(Map<String, ReferenceSafetensors.Tensor> in, int layer, String proj) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (int x = 0; x < EXPERTS; x++) b.writeBytes(in.get(expert(layer, x, proj)).bytes());
        return b.toByteArray();
    }

    /** F32 little-endian bytes as F16 rounded to nearest even (numpy's astype(float16)). */
    private static byte[] f16(byte[] f32) {
        ByteBuffer src = ByteBuffer.wrap(f32).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer dst = ByteBuffer.allocate(f32.length / 2).order(ByteOrder.LITTLE_ENDIAN);
        while (src.hasRemaining()) dst.putShort(Float.floatToFloat16(src.getFloat()));
        return dst.array();
    }

    @Test
    void keysAreTextModelsWithTheExpertsThenTheExpertWidth() throws IOException {
        ReferenceGguf g = converted(folder("Qwen3-MoE-keys"), "f16");
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("qwen3moe");
        List<String> keys = new ArrayList<>(g.kv.keySet());
        List<String> hyper = keys.subList(keys.indexOf("qwen3moe.block_count"), keys.size());
        assertThat(hyper).containsExactly("qwen3moe.block_count", "qwen3moe.context_length", "qwen3moe.embedding_length",
                "qwen3moe.feed_forward_length", "qwen3moe.attention.head_count", "qwen3moe.attention.head_count_kv",
                "qwen3moe.rope.freq_base", "qwen3moe.attention.layer_norm_rms_epsilon", "qwen3moe.expert_count",
                "qwen3moe.expert_used_count", "qwen3moe.attention.key_length", "qwen3moe.attention.value_length",
                "general.file_type", "qwen3moe.expert_feed_forward_length", "general.quantization_version",
                "tokenizer.ggml.model");
        for (String k : List.of("qwen3moe.expert_count", "qwen3moe.expert_used_count", "qwen3moe.expert_feed_forward_length")) {
            assertThat(g.kv.get(k).type()).as(k + " is add_uint32's").isEqualTo(4);
        }
        assertThat(g.kv.get("qwen3moe.expert_count").asLong()).isEqualTo(EXPERTS);
        assertThat(g.kv.get("qwen3moe.expert_used_count").asLong()).isEqualTo(USED);
        assertThat(g.kv.get("qwen3moe.expert_feed_forward_length").asLong()).isEqualTo(EXPERT_FF);
        assertThat(g.kv.get("qwen3moe.feed_forward_length").asLong()).isEqualTo(96);
        assertThat(g.kv).doesNotContainKeys("qwen3moe.pooling_type", "qwen3moe.vocab_size", "qwen3moe.rope.dimension_count");
    }

    /**
     * gguf-py's size label of a mixture: experts x (shared + one expert's parameters). Here
     * shared = 2 x 64 x 32 + 32 (embeddings, output, norm) + 2 x 6368 (per block: norms 32 + 32
     * + 16 + 16, q 2048, k 1024, v 1024, o 2048, router 128) = 16864, one expert 2 x 3 x 1024:
     * 23008, 4x23K (the total, 41440, would be 41K).
     */
    @Test
    void sizeLabelCountsOneExpert() throws IOException {
        ReferenceGguf g = converted(folder("moe-model"), "f32");
        assertThat(g.kv.get("general.size_label").asString()).isEqualTo("4x23K");
    }

    /**
     * Names, order, shapes, types and bytes: each projection's experts stacked in expert order
     * (the stored bytes one expert after another at F32, each value rounded to F16 at F16),
     * GGUF ne [columns, rows, experts]; the stacks where the block's last expert comes (before
     * mlp.gate), down, gate, up; the router F32 at any output type.
     */
    @Test
    void expertsAreStackedInExpertOrder() throws IOException {
        Path dir = folder("Qwen3-MoE-stack");
        Map<String, ReferenceSafetensors.Tensor> in = ReferenceSafetensors.read(dir.resolve("model.safetensors"));
        ReferenceGguf f32 = converted(dir, "f32"), f16 = converted(dir, "f16");
        List<String> block0 = f32.tensors.stream().map(ReferenceGguf.Tensor::name).filter(n -> n.startsWith("blk.0.")).toList();
        assertThat(block0).containsExactly("blk.0.attn_norm.weight", "blk.0.ffn_down_exps.weight", "blk.0.ffn_gate_exps.weight",
                "blk.0.ffn_up_exps.weight", "blk.0.ffn_gate_inp.weight", "blk.0.ffn_norm.weight", "blk.0.attn_k_norm.weight",
                "blk.0.attn_k.weight", "blk.0.attn_output.weight", "blk.0.attn_q_norm.weight", "blk.0.attn_q.weight",
                "blk.0.attn_v.weight");
        assertThat(f32.tensors).hasSize(3 + LAYERS * 12);
        for (int i = 0; i < LAYERS; i++) {
            for (String proj : PROJECTIONS) {
                String name = "blk." + i + ".ffn_" + proj.replace("_proj", "") + "_exps.weight";
                long[] ne = proj.equals("down_proj") ? new long[]{EXPERT_FF, HIDDEN, EXPERTS} : new long[]{HIDDEN, EXPERT_FF, EXPERTS};
                assertThat(f32.tensor(name).ne()).as(name).containsExactly(ne);
                assertThat(f32.tensor(name).bytes()).as(name + ": the experts' bytes in expert order").isEqualTo(stack(in, i, proj));
                assertThat(f16.tensor(name).type()).as(name + " in an F16 file").isEqualTo(1);
                assertThat(f16.tensor(name).bytes()).as(name + " in an F16 file").isEqualTo(f16(stack(in, i, proj)));
            }
            String router = "blk." + i + ".ffn_gate_inp.weight";
            assertThat(f16.tensor(router).type()).as("the router stays F32").isZero();
            assertThat(f16.tensor(router).ne()).containsExactly(HIDDEN, EXPERTS);
            assertThat(f16.tensor(router).bytes()).isEqualTo(in.get("model.layers." + i + ".mlp.gate.weight").bytes());
        }
    }

    /** Q8_0 quantizes the 3-D stacks row by row (ggml's reference quantizer), the router staying F32. */
    @Test
    void q8StacksAreQuantizedRowByRow() throws IOException {
        ReferenceGguf q8 = converted(folder("Qwen3-MoE-q8"), "q8_0");
        ReferenceGguf.Tensor gate = q8.tensor("blk.1.ffn_gate_exps.weight");
        assertThat(gate.type()).isEqualTo(8);
        assertThat(gate.bytes()).hasSize(EXPERTS * EXPERT_FF * (HIDDEN / 32) * 34);
        assertThat(q8.tensor("blk.1.ffn_gate_inp.weight").type()).isZero();
        assertThat(q8.kv.get("general.file_type").asLong()).isEqualTo(7);
    }

    @ParameterizedTest
    @CsvSource({"1,3,up_proj", "0,0,down_proj"})
    void aMissingExpertIsMalformedNamingIt(int layer, int x, String proj) throws IOException {
        Map<String, ReferenceSafetensors.Tensor> t = tensors(3);
        assertThat(t.remove(expert(layer, x, proj))).isNotNull();
        Path dir = folder("Qwen3-MoE-missing", t, config());
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains(expert(layer, x, proj)).contains("block " + layer);
        assertThat(Files.exists(tmp.resolve("out.gguf"))).as("no half-written output").isFalse();
    }

    @Test
    void anExpertBeyondTheCountIsMalformedNamingIt() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> t = tensors(4);
        t.put(expert(0, EXPERTS, "gate_proj"), t.get(expert(0, 0, "gate_proj")));
        Path dir = folder("Qwen3-MoE-extra", t, config());
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains(expert(0, EXPERTS, "gate_proj")).contains("num_experts is " + EXPERTS);
    }

    @Test
    void anExpertOfTheWrongWidthIsMalformedNamingIt() throws IOException {
        Path dir = folder("Qwen3-MoE-width", tensors(5), config().replace("\"moe_intermediate_size\": 32", "\"moe_intermediate_size\": 16"));
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("config.json moe_intermediate_size is 16").contains("32");
    }

    @Test
    void aRouterWithOtherThanOneRowPerExpertIsMalformed() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> t = tensors(6);
        t.put("model.layers.0.mlp.gate.weight", new ReferenceSafetensors.Tensor("F32", new long[]{EXPERTS + 1, HIDDEN},
                new byte[4 * (EXPERTS + 1) * HIDDEN]));
        CorpusCliTest.Run r = DecoderReference.convert(folder("Qwen3-MoE-router", t, config()), "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("model.layers.0.mlp.gate.weight").contains("5 rows");
    }

    /** Transformers' Qwen3MoeConfig defaults norm_topk_prob to false; llama.cpp's qwen3moe always renormalizes. */
    @ParameterizedTest
    @CsvSource(delimiter = ';', value = {
            "\"norm_topk_prob\": true;\"norm_topk_prob\": false;6;norm_topk_prob",
            "\"norm_topk_prob\": true, ;;3;config.json norm_topk_prob is missing",
            "\"mlp_only_layers\": [];\"mlp_only_layers\": [1];6;mlp_only_layers",
            "\"decoder_sparse_step\": 1;\"decoder_sparse_step\": 2;6;decoder_sparse_step",
            "\"num_experts\": 4, ;;3;config.json num_experts is missing",
            "\"moe_intermediate_size\": 32, ;;3;config.json moe_intermediate_size is missing"})
    void configValuesLlamaCppDoesNotComputeAreRefused(String from, String to, int code, String message) throws IOException {
        String config = config();
        assertThat(config).contains(from);
        Path dir = folder("Qwen3-MoE-config", tensors(7), config.replace(from, to == null ? "" : to));
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(code);
        assertThat(r.err()).contains(message);
    }

    @Test
    void aDenseFamilyWithExpertsIsStillRefused() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("qwen3-experts"));
        Files.writeString(dir.resolve("config.json"), QwenToGgufTest.config("qwen3", true).replace("\"head_dim\"",
                "\"num_experts\": 4, \"head_dim\""));
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), QwenToGgufTest.tensors("qwen3", true, 1));
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("mixture-of-experts Qwen3ForCausalLM").contains("Qwen3MoeForCausalLM");
    }

    /**
     * llama.cpp's logits of our conversion = the reference forward pass with Hugging Face's
     * Qwen3-MoE routing (softmax, top 2 of 4, renormalized): within 1e-4 of the largest logit
     * at F32 (measured 3.0e-5), 3e-3 at F16 (measured 6.5e-4). The reference with the experts
     * numbered backwards, what a file stacked in the wrong order computes, is far off (1.05).
     */
    @ParameterizedTest
    @CsvSource({"f32,", "f16,", "f32,reverse-experts"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String mutate) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        Path oracles = DecoderReference.oracles();
        Path script = DecoderReference.SCRIPT;

        Path dir = tmp.resolve("Qwen3-MoE-forward");
        run(List.of("python3", script.toString(), "make", "qwen3moe", dir.toString(), "--tokenizer", tok.get().toString(),
                "--seed", "7"));
        Path out = tmp.resolve("qwen3moe-" + dtype + ".gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, dtype, out, true);
        assertThat(r.code()).as(r.err()).isZero();
        List<String> cmd = new ArrayList<>(List.of("python3", script.toString(), "compare", dir.toString(), out.toString(),
                oracles.toString(), "--weights", dtype, "--tokens", "151643,14990,1879,11,358,1079,264,13,151644,872,198,9707"));
        if (mutate != null) cmd.addAll(List.of("--mutate", mutate));
        JsonNode cmp = LlamaRunOracleTest.JSON.readTree(run(cmd));
        JsonNode f16cache = cmp.path("kv_f16");
        if (mutate != null) {
            assertThat(f16cache.path("max_rel_diff").asDouble()).as("a wrong expert order is caught: " + cmp).isGreaterThan(0.1);
            return;
        }
        assertThat(f16cache.path("argmax").asInt()).as(cmp.toString()).isEqualTo(cmp.path("llama_argmax").asInt());
        assertThat(f16cache.path("max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(dtype.equals("f32") ? 1e-4 : 3e-3);
    }

    // ---------------------------------------------------------------- Mixtral (llama with experts)

    static final int MIXTRAL_FF = 48;

    static String mixtralConfig() {
        return "{\"architectures\": [\"MixtralForCausalLM\"], \"model_type\": \"mixtral\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + MIXTRAL_FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", "
                + "\"num_local_experts\": " + EXPERTS + ", \"num_experts_per_tok\": " + USED + ", "
                + "\"max_position_embeddings\": 4096, \"rms_norm_eps\": 1e-05, \"rope_theta\": 1000000.0, "
                + "\"sliding_window\": null, \"tie_word_embeddings\": false, \"torch_dtype\": \"float32\"}";
    }

    static String mixtralExpert(int layer, int x, String w) {
        return "model.layers." + layer + ".block_sparse_moe.experts." + x + "." + w + ".weight";
    }

    /** A tiny random Mixtral (head 8 = hidden / heads) as F32: Qwen3-MoE's tensors under Mixtral's names. */
    static Map<String, ReferenceSafetensors.Tensor> mixtralTensors(long seed) {
        Random random = new Random(seed);
        int hd = HIDDEN / HEADS;
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "self_attn.q_proj.weight", new long[]{HEADS * hd, HIDDEN});
            shapes.put(p + "self_attn.k_proj.weight", new long[]{KV_HEADS * hd, HIDDEN});
            shapes.put(p + "self_attn.v_proj.weight", new long[]{KV_HEADS * hd, HIDDEN});
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, HEADS * hd});
            shapes.put(p + "block_sparse_moe.gate.weight", new long[]{EXPERTS, HIDDEN});
            for (int x = 0; x < EXPERTS; x++) {
                shapes.put(mixtralExpert(i, x, "w1"), new long[]{MIXTRAL_FF, HIDDEN});
                shapes.put(mixtralExpert(i, x, "w3"), new long[]{MIXTRAL_FF, HIDDEN});
                shapes.put(mixtralExpert(i, x, "w2"), new long[]{HIDDEN, MIXTRAL_FF});
            }
        }
        return DecoderReference.randomF32(shapes, random);
    }

    /** LlamaModel's keys: TextModel's with the two expert keys, then vocab_size and rope.dimension_count. */
    @Test
    void mixtralKeysAreLlamasWithTheExperts() throws IOException {
        ReferenceGguf g = converted(folder("Mixtral-keys", mixtralTensors(1), mixtralConfig()), "f16");
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("llama");
        List<String> keys = new ArrayList<>(g.kv.keySet());
        assertThat(keys.subList(keys.indexOf("llama.block_count"), keys.size())).containsExactly("llama.block_count",
                "llama.context_length", "llama.embedding_length", "llama.feed_forward_length", "llama.attention.head_count",
                "llama.attention.head_count_kv", "llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon",
                "llama.expert_count", "llama.expert_used_count", "general.file_type", "llama.vocab_size",
                "llama.rope.dimension_count", "general.quantization_version", "tokenizer.ggml.model");
        assertThat(g.kv.get("llama.expert_count").asLong()).isEqualTo(EXPERTS);
        assertThat(g.kv.get("llama.expert_used_count").asLong()).isEqualTo(USED);
    }

    /**
     * LlamaModel.modify_tensors stacks w1, w2, w3 (gate, down, up) where the block's last
     * expert comes, before the router and the block's other tensors; bytes as the experts'.
     */
    @Test
    void mixtralExpertsAreStackedW1W2W3() throws IOException {
        Path dir = folder("Mixtral-stack", mixtralTensors(2), mixtralConfig());
        Map<String, ReferenceSafetensors.Tensor> in = ReferenceSafetensors.read(dir.resolve("model.safetensors"));
        ReferenceGguf f32 = converted(dir, "f32");
        List<String> block1 = f32.tensors.stream().map(ReferenceGguf.Tensor::name).filter(n -> n.startsWith("blk.1.")).toList();
        assertThat(block1).containsExactly("blk.1.ffn_gate_exps.weight", "blk.1.ffn_down_exps.weight", "blk.1.ffn_up_exps.weight",
                "blk.1.ffn_gate_inp.weight", "blk.1.attn_norm.weight", "blk.1.ffn_norm.weight", "blk.1.attn_k.weight",
                "blk.1.attn_output.weight", "blk.1.attn_q.weight", "blk.1.attn_v.weight");
        for (String[] w : new String[][]{{"w1", "gate"}, {"w2", "down"}, {"w3", "up"}}) {
            ByteArrayOutputStream want = new ByteArrayOutputStream();
            for (int x = 0; x < EXPERTS; x++) want.writeBytes(in.get(mixtralExpert(1, x, w[0])).bytes());
            assertThat(f32.tensor("blk.1.ffn_" + w[1] + "_exps.weight").bytes()).as(w[0]).isEqualTo(want.toByteArray());
        }
    }

    /** Q8_0: a stack whose rows are whole blocks (w1, w3: 32) is Q8_0, w2's rows of 48 fall back to F16 as gguf-py's do. */
    @Test
    void mixtralQ8StackOfPartialBlocksIsF16() throws IOException {
        ReferenceGguf q8 = converted(folder("Mixtral-q8", mixtralTensors(3), mixtralConfig()), "q8_0");
        assertThat(q8.tensor("blk.0.ffn_gate_exps.weight").type()).isEqualTo(8);
        assertThat(q8.tensor("blk.0.ffn_up_exps.weight").type()).isEqualTo(8);
        assertThat(q8.tensor("blk.0.ffn_down_exps.weight").type()).isEqualTo(1);
        assertThat(q8.tensor("blk.0.ffn_gate_inp.weight").type()).isZero();
    }

    @Test
    void aLlamaWithExpertsIsRefused() throws IOException {
        Path dir = folder("llama-experts", mixtralTensors(4), mixtralConfig().replace("MixtralForCausalLM", "LlamaForCausalLM"));
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("mixture-of-experts LlamaForCausalLM").contains("MixtralForCausalLM");
    }

    @Test
    void aMissingMixtralExpertIsMalformedNamingIt() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> t = mixtralTensors(5);
        t.remove(mixtralExpert(0, 2, "w2"));
        CorpusCliTest.Run r = DecoderReference.convert(folder("Mixtral-missing", t, mixtralConfig()), "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains(mixtralExpert(0, 2, "w2"));
    }

    /**
     * Mixtral with the corpus's SentencePiece vocabulary: llama.cpp's logits against the
     * reference (Mixtral always renormalizes the top-k weights): F32 within 1e-4 (measured
     * 1.5e-7), F16 3e-3 (1.1e-3); the experts numbered backwards 1.11 off.
     */
    @ParameterizedTest
    @CsvSource({"f32,", "f16,", "f32,reverse-experts"})
    void llamaCppComputesTheMixtralReference(String dtype, String mutate) throws Exception {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's SentencePiece tokenizer.model is not here: llama.cpp needs a vocabulary; not checked");
        Path oracles = DecoderReference.oracles();
        Path script = DecoderReference.SCRIPT;

        Path dir = tmp.resolve("Mixtral-forward");
        run(List.of("python3", script.toString(), "make", "mixtral", dir.toString(), "--sp", sp.get().toString(), "--seed", "7"));
        Path out = tmp.resolve("mixtral-" + dtype + ".gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, dtype, out, true);
        assertThat(r.code()).as(r.err()).isZero();
        List<String> cmd = new ArrayList<>(List.of("python3", script.toString(), "compare", dir.toString(), out.toString(),
                oracles.toString(), "--weights", dtype));
        if (mutate != null) cmd.addAll(List.of("--mutate", mutate));
        JsonNode cmp = LlamaRunOracleTest.JSON.readTree(run(cmd));
        JsonNode f16cache = cmp.path("kv_f16");
        if (mutate != null) {
            assertThat(f16cache.path("max_rel_diff").asDouble()).as("a wrong expert order is caught: " + cmp).isGreaterThan(0.1);
            return;
        }
        assertThat(f16cache.path("argmax").asInt()).as(cmp.toString()).isEqualTo(cmp.path("llama_argmax").asInt());
        assertThat(f16cache.path("max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(dtype.equals("f32") ? 1e-4 : 3e-3);
    }

    private String run(List<String> cmd) throws Exception {
        return DecoderReference.run(tmp, cmd);
    }

    /**
     * Per-expert Qwen MoE tensors ({@code mlp.experts.{x}.{gate,up,down}_proj.weight}, {@code experts} of
     * width {@code width}) laid out as transformers 5 saves them: per block {@code mlp.experts.gate_up_proj}
     * {@code [E, 2 I, hidden]}, each expert's gate rows then its up rows, and {@code mlp.experts.down_proj}
     * {@code [E, hidden, I]}, without {@code .weight} in the blocks {@code bare} lists and with it in the others.
     */
    static Map<String, ReferenceSafetensors.Tensor> fused(Map<String, ReferenceSafetensors.Tensor> perExpert, int experts,
                                                         List<Integer> bare) {
        Map<String, ReferenceSafetensors.Tensor> out = new TreeMap<>();
        Map<Integer, long[]> shapes = new TreeMap<>();
        for (var e : perExpert.entrySet()) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("model\\.layers\\.(\\d+)\\.mlp\\.experts\\.\\d+\\..*")
                    .matcher(e.getKey());
            if (!m.matches()) {
                out.put(e.getKey(), e.getValue());
                continue;
            }
            int layer = Integer.parseInt(m.group(1));
            long[] gate = perExpert.get("model.layers." + layer + ".mlp.experts.0.gate_proj.weight").shape();
            shapes.put(layer, gate);
        }
        for (var l : shapes.entrySet()) {
            int layer = l.getKey();
            long width = l.getValue()[0], hidden = l.getValue()[1];
            ByteArrayOutputStream gateUp = new ByteArrayOutputStream(), down = new ByteArrayOutputStream();
            String dtype = perExpert.get("model.layers." + layer + ".mlp.experts.0.gate_proj.weight").dtype();
            for (int x = 0; x < experts; x++) {
                String p = "model.layers." + layer + ".mlp.experts." + x + ".";
                gateUp.writeBytes(perExpert.get(p + "gate_proj.weight").bytes());
                gateUp.writeBytes(perExpert.get(p + "up_proj.weight").bytes());
                down.writeBytes(perExpert.get(p + "down_proj.weight").bytes());
            }
            String suffix = bare.contains(layer) ? "" : ".weight";
            String p = "model.layers." + layer + ".mlp.experts.";
            out.put(p + "gate_up_proj" + suffix, new ReferenceSafetensors.Tensor(dtype, new long[]{experts, 2 * width, hidden},
                    gateUp.toByteArray()));
            out.put(p + "down_proj" + suffix, new ReferenceSafetensors.Tensor(dtype, new long[]{experts, hidden, width},
                    down.toByteArray()));
        }
        return out;
    }

    /**
     * transformers 5 saves a Qwen MoE's experts fused per block; the converter's Qwen2MoeModel takes them (gate and
     * up split into their halves of rows, down as it is): the same file as from the experts one by one, for Qwen3-MoE
     * and Qwen2-MoE, with and without {@code .weight} on the fused names.
     */
    @ParameterizedTest
    @CsvSource({"qwen3moe, f16", "qwen3moe, q8_0", "qwen2moe, bf16", "qwen2moe, f32"})
    void transformers5sFusedExpertsGiveTheSameFile(String arch, String dtype) throws IOException {
        boolean q3 = arch.equals("qwen3moe");
        Map<String, ReferenceSafetensors.Tensor> perExpert = q3 ? tensors(71) : Qwen2MoeToGgufTest.tensors(72);
        String config = q3 ? config() : Qwen2MoeToGgufTest.config("");
        Path one = Files.createDirectories(tmp.resolve("per-expert").resolve("Qwen-MoE-fused"));
        Files.writeString(one.resolve("config.json"), config);
        HfToGgufTest.writeSafetensors(one.resolve("model.safetensors"), perExpert);
        Path two = Files.createDirectories(tmp.resolve("fused").resolve("Qwen-MoE-fused"));
        Files.writeString(two.resolve("config.json"), config);
        HfToGgufTest.writeSafetensors(two.resolve("model.safetensors"), fused(perExpert, EXPERTS, List.of(0)));
        Path a = tmp.resolve("a.gguf"), b = tmp.resolve("b.gguf");
        CorpusCliTest.Run ra = DecoderReference.convert(one, dtype, a, false), rb = DecoderReference.convert(two, dtype, b, false);
        assertThat(ra.code()).as(ra.err()).isZero();
        assertThat(rb.code()).as(rb.err()).isZero();
        assertThat(ReferenceGguf.read(b).tensor("blk.1.ffn_gate_exps.weight").ne()).hasSize(3);
        assertThat(Files.readAllBytes(b)).as("the fused folder's file, byte for byte").isEqualTo(Files.readAllBytes(a));
    }

    /** A fused block whose shapes config.json does not give, or a block with both layouts: exit 3 naming the tensor. */
    @Test
    void fusedExpertsThatDisagreeAreRefused() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> fused = fused(tensors(73), EXPERTS, List.of());
        Path out = tmp.resolve("fused-bad.gguf");
        Path narrow = folder("Qwen3-MoE-fused-width", fused, config().replace("\"moe_intermediate_size\": " + EXPERT_FF,
                "\"moe_intermediate_size\": " + (EXPERT_FF / 2)));
        CorpusCliTest.Run r = DecoderReference.convert(narrow, "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("mlp.experts.down_proj").contains("moe_intermediate_size").doesNotContain("Exception");
        Map<String, ReferenceSafetensors.Tensor> both = new TreeMap<>(fused);
        both.put(expert(1, 2, "up_proj"), tensors(73).get(expert(1, 2, "up_proj")));
        r = DecoderReference.convert(folder("Qwen3-MoE-fused-both", both, config()), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("model.layers.1.mlp.experts").contains("fused").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }
}
