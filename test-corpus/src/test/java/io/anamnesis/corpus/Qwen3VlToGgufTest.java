package io.anamnesis.corpus;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Qwen3-VL folders ({@code Qwen3VLForConditionalGeneration}, {@code Qwen3VLMoeForConditionalGeneration})
 * to GGUF as the converter's {@code Qwen3VLTextModel} and {@code Qwen3VLMoeTextModel} write their
 * language models: qwen3's (qwen3moe's) tensors from {@code model.language_model.*}, the vision tower
 * left out, the interleaved M-RoPE sections and the DeepStack layer count as keys, the MoE's packed
 * experts split and transposed; the bad inputs. {@link ConverterParityTest} compares such folders with
 * the converter's own files; with the oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer
 * ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's logits are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class Qwen3VlToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, FF = 48, LAYERS = 2, HEADS = 4, KV_HEADS = 2, HEAD_DIM = 16, EXPERTS = 4, USED = 2,
            EXPERT_FF = 24;

    @TempDir
    Path tmp;

    /**
     * A Qwen3-VL config.json as the published ones lay it out: the language model's keys under
     * {@code text_config} with the rope scaling {@code {"mrope_interleaved": true, "mrope_section":
     * SECTIONS, "rope_type": "default"}} ({@code sections} null: none), a {@code vision_config} with
     * {@code deepstack} DeepStack layers.
     */
    static String config(boolean moe, String sections, int deepstack) {
        StringBuilder indexes = new StringBuilder();
        for (int i = 0; i < deepstack; i++) indexes.append(i == 0 ? "" : ", ").append(2 * i + 1);
        String rope = sections == null ? "null" : "{\"mrope_interleaved\": true, \"mrope_section\": " + sections + ", \"rope_type\": \"default\"}";
        return "{\"architectures\": [\"" + (moe ? "Qwen3VLMoeForConditionalGeneration" : "Qwen3VLForConditionalGeneration") + "\"], "
                + "\"model_type\": \"" + (moe ? "qwen3_vl_moe" : "qwen3_vl") + "\", \"image_token_id\": 151655, \"tie_word_embeddings\": false, "
                + "\"text_config\": {\"model_type\": \"" + (moe ? "qwen3_vl_moe_text" : "qwen3_vl_text") + "\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", \"head_dim\": " + HEAD_DIM + ", "
                + (moe ? "\"num_experts\": " + EXPERTS + ", \"num_experts_per_tok\": " + USED + ", \"moe_intermediate_size\": " + EXPERT_FF
                + ", \"decoder_sparse_step\": 1, \"mlp_only_layers\": [], " : "")
                + "\"attention_bias\": false, \"max_position_embeddings\": 262144, \"rms_norm_eps\": 1e-06, \"rope_theta\": 5000000, "
                + "\"rope_scaling\": " + rope + ", \"tie_word_embeddings\": false, \"dtype\": \"bfloat16\"}, "
                + "\"vision_config\": {\"model_type\": \"qwen3_vl\", \"depth\": 8, \"hidden_size\": 16, \"out_hidden_size\": " + HIDDEN + ", "
                + "\"deepstack_visual_indexes\": [" + indexes + "]}}";
    }

    /** A tiny random Qwen3-VL (MoE) checkpoint as F32, in name order: the language model, lm_head and a vision tower's tensors. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(boolean moe, long seed) {
        Map<String, long[]> shapes = new TreeMap<>();
        String m = "model.language_model.";
        shapes.put(m + "embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put(m + "norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = m + "layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "self_attn.q_proj.weight", new long[]{(long) HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.k_proj.weight", new long[]{(long) KV_HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.v_proj.weight", new long[]{(long) KV_HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD_DIM});
            shapes.put(p + "self_attn.q_norm.weight", new long[]{HEAD_DIM});
            shapes.put(p + "self_attn.k_norm.weight", new long[]{HEAD_DIM});
            if (moe) {
                // Qwen3VLMoeTextExperts: gate_up_proj [E, hidden, 2 I], down_proj [E, I, hidden], no .weight
                shapes.put(p + "mlp.gate.weight", new long[]{EXPERTS, HIDDEN});
                shapes.put(p + "mlp.experts.gate_up_proj", new long[]{EXPERTS, HIDDEN, 2L * EXPERT_FF});
                shapes.put(p + "mlp.experts.down_proj", new long[]{EXPERTS, EXPERT_FF, HIDDEN});
            } else {
                shapes.put(p + "mlp.gate_proj.weight", new long[]{FF, HIDDEN});
                shapes.put(p + "mlp.up_proj.weight", new long[]{FF, HIDDEN});
                shapes.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
            }
        }
        shapes.put("model.visual.patch_embed.proj.weight", new long[]{16, 3, 2, 16, 16});
        shapes.put("model.visual.blocks.0.norm1.weight", new long[]{16});
        shapes.put("model.visual.deepstack_merger_list.0.norm.weight", new long[]{64});
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    private static float at(byte[] bytes, long i) {
        return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getFloat(Math.toIntExact(4 * i));
    }

    private static List<Integer> int32s(ReferenceGguf.Kv kv) {
        ByteBuffer b = ByteBuffer.wrap(kv.value()).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(b.getInt()).as("int32 elements").isEqualTo(5);
        long n = b.getLong();
        List<Integer> got = new ArrayList<>();
        for (long i = 0; i < n; i++) got.add(b.getInt());
        return got;
    }

    @ParameterizedTest
    @CsvSource({"false, qwen3vl", "true, qwen3vlmoe"})
    void theLanguageModelWithItsSectionsAndDeepStackLayers(boolean moe, String arch) throws IOException {
        Path out = tmp.resolve("vl.gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", folder("Qwen3-VL-tiny", config(moe, "[3, 3, 2]", 3), tensors(moe, 181)).toString(),
                "--to", "gguf", "--dtype", "f32", "-o", out.toString(), "--no-vocab");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out() + r.err()).contains("left out 3 tensors of the vision tower");
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo(arch);
        assertThat(int32s(g.kv.get(arch + ".rope.dimension_sections"))).containsExactly(3, 3, 2, 0);
        assertThat(g.kv.get(arch + ".n_deepstack_layers").asLong()).isEqualTo(3);
        assertThat(Float.intBitsToFloat((int) g.kv.get(arch + ".rope.freq_base").asLong())).isEqualTo(5_000_000f);
        assertThat(g.kv).doesNotContainKey(arch + ".rope.scaling.type");
        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names).contains("token_embd.weight", "output.weight", "blk.1.attn_q_norm.weight", "blk.1.attn_k_norm.weight")
                .noneMatch(n -> n.contains("visual") || n.startsWith("v.") || n.contains("deepstack"));
        if (!moe) {
            assertThat(names).contains("blk.1.ffn_gate.weight").noneMatch(n -> n.contains("exps"));
            return;
        }
        assertThat(g.kv.get(arch + ".expert_count").asLong()).isEqualTo(EXPERTS);
        assertThat(g.kv.get(arch + ".expert_used_count").asLong()).isEqualTo(USED);
        assertThat(g.kv.get(arch + ".expert_feed_forward_length").asLong()).isEqualTo(EXPERT_FF);
        assertThat(g.tensor("blk.0.ffn_gate_inp.weight").type()).as("the router stays F32").isZero();
        // gate_up_proj [E, hidden, 2 I]: ffn_gate_exps [E, I, hidden] is its first I columns transposed, ffn_up_exps the last I
        Map<String, ReferenceSafetensors.Tensor> in = tensors(true, 181);
        byte[] gateUp = in.get("model.language_model.layers.1.mlp.experts.gate_up_proj").bytes();
        ReferenceGguf.Tensor gate = g.tensor("blk.1.ffn_gate_exps.weight"), up = g.tensor("blk.1.ffn_up_exps.weight");
        assertThat(gate.ne()).containsExactly(HIDDEN, EXPERT_FF, EXPERTS);
        assertThat(up.ne()).containsExactly(HIDDEN, EXPERT_FF, EXPERTS);
        for (int e = 0; e < EXPERTS; e++) {
            for (int j = 0; j < EXPERT_FF; j++) {
                for (int h = 0; h < HIDDEN; h += 5) {
                    long src = ((long) e * HIDDEN + h) * 2 * EXPERT_FF;
                    assertThat(at(gate.bytes(), ((long) e * EXPERT_FF + j) * HIDDEN + h)).isEqualTo(at(gateUp, src + j));
                    assertThat(at(up.bytes(), ((long) e * EXPERT_FF + j) * HIDDEN + h)).isEqualTo(at(gateUp, src + EXPERT_FF + j));
                }
            }
        }
        // down_proj [E, I, hidden] transposed to ffn_down_exps [E, hidden, I]
        byte[] down = in.get("model.language_model.layers.0.mlp.experts.down_proj").bytes();
        ReferenceGguf.Tensor d = g.tensor("blk.0.ffn_down_exps.weight");
        assertThat(d.ne()).containsExactly(EXPERT_FF, HIDDEN, EXPERTS);
        assertThat(at(d.bytes(), (3L * HIDDEN + 5) * EXPERT_FF + 9)).isEqualTo(at(down, (3L * EXPERT_FF + 9) * HIDDEN + 5));
    }

    /** llama.cpp's qwen3vl reads rope.dimension_sections as required: a file without them would not load. */
    @ParameterizedTest
    @CsvSource({"false", "true"})
    void noSectionsIsRefused(boolean moe) throws IOException {
        Path out = tmp.resolve("nosections.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("Qwen3-VL-nosections", config(moe, null, 1), tensors(moe, 182)), "f16",
                out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("mrope_section").contains(moe ? "qwen3vlmoe" : "qwen3vl").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /** Sections that do not cover half a head: llama.cpp's M-RoPE would rotate another share of it. */
    @Test
    void sectionsThatDoNotFitTheHeadAreRefused() throws IOException {
        Path out = tmp.resolve("sections.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("Qwen3-VL-sections", config(false, "[24, 20, 20]", 3), tensors(false, 183)),
                "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("mrope_section").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /** An experts' tensor whose shape config.json does not give (the experts' width here). */
    @Test
    void packedExpertsThatDisagreeWithTheConfigAreRefused() throws IOException {
        Path out = tmp.resolve("width.gguf");
        String config = config(true, "[3, 3, 2]", 3).replace("\"moe_intermediate_size\": " + EXPERT_FF, "\"moe_intermediate_size\": 16");
        CorpusCliTest.Run r = DecoderReference.convert(folder("Qwen3-VL-MoE-width", config, tensors(true, 184)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("experts.down_proj").contains("moe_intermediate_size 16").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits of a Qwen3-VL (MoE) file on text against the reference forward pass (qwen3's,
     * qwen3moe's renormalized: interleaved M-RoPE with sections 6, 5, 5 over head 32 gives every
     * rotated pair the token's position), the MoE's gate taken from the wrong half told apart. The
     * folder has no DeepStack layers: the oracles' llama.cpp build stops on an assertion
     * ({@code ggml_can_repeat}) evaluating text with any (the converter's files as well; llama.cpp at
     * the converter's commit adds the text tokens' zero DeepStack parts).
     */
    @ParameterizedTest
    @CsvSource({"qwen3vl, f32, ", "qwen3vl, f16, ", "qwen3vlmoe, f32, ", "qwen3vlmoe, f16, ", "qwen3vlmoe, f32, --mutate;swap-gate-up"})
    void llamaCppComputesTheReferenceForwardPass(String arch, String dtype, String wrong) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.oracles();
        Path dir = tmp.resolve(arch + "-forward");
        DecoderReference.make(tmp, arch, dir.toString(), "--tokenizer", tok.get().toString(), "--seed", "5");
        Path config = dir.resolve("config.json");
        String json = Files.readString(config), none = json.replaceAll("\"deepstack_visual_indexes\": \\[[^\\]]*\\]",
                "\"deepstack_visual_indexes\": []");
        assertThat(none).isNotEqualTo(json);
        Files.writeString(config, none);
        DecoderReference.llamaCppComputesTheReferenceOf(tmp, dir, dtype, DecoderReference.options(wrong), 0.1,
                dtype.equals("f32") ? 1e-4 : 3e-3);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("Qwen3-VL-tiny", config(false, "[3, 3, 2]", 3), tensors(false, 185), all),
                new ConverterParityTest.Folder("Qwen3-VL-tiny-bf16", config(false, "[4, 2, 2]", 0),
                        ConverterParityTest.as("BF16", tensors(false, 186)), withAuto),
                new ConverterParityTest.Folder("Qwen3-VL-MoE-tiny", config(true, "[3, 3, 2]", 3), tensors(true, 187), all),
                new ConverterParityTest.Folder("Qwen3-VL-MoE-tiny-bf16", config(true, "[3, 3, 2]", 2),
                        ConverterParityTest.as("BF16", tensors(true, 188)), withAuto));
    }
}
