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
 * An OpenAI gpt-oss folder ({@code GptOssForCausalLM}) to GGUF as the converter's
 * {@code GptOssModel} writes it: the experts, stored packed as transformers holds them (gate
 * and up interleaved, each expert's matrix input-major), split and transposed; a published
 * checkpoint's MXFP4 blocks written as ggml MXFP4 with their values unchanged, before every
 * other tensor; the attention sinks; the keys; the bad inputs. {@link ConverterParityTest}
 * compares such folders with the converter's own files; with the oracles ({@code ORACLE_CACHE})
 * and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's logits are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass (skipped, saying so, without them).
 */
class GptOssToGgufTest {
    static final int VOCAB = 64, HIDDEN = 64, LAYERS = 2, HEADS = 4, KV_HEADS = 2, HEAD = 32, EXPERTS = 4, WIDTH = 64;

    @TempDir
    Path tmp;

    /** A tiny gpt-oss config.json (layer 0 local, layer 1 global); {@code extra} more top-level entries. */
    static String config(String extra) {
        return "{\"architectures\": [\"GptOssForCausalLM\"], \"model_type\": \"gpt_oss\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + WIDTH + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", \"head_dim\": " + HEAD + ", "
                + "\"num_local_experts\": " + EXPERTS + ", \"num_experts_per_tok\": 2, \"experts_per_token\": 2, "
                + "\"sliding_window\": 128, \"layer_types\": [\"sliding_attention\", \"full_attention\"], "
                + "\"max_position_embeddings\": 131072, \"rms_norm_eps\": 1e-05, \"rope_theta\": 150000, " + extra
                + "\"swiglu_limit\": 7.0, \"attention_bias\": true, \"tie_word_embeddings\": false}";
    }

    /** gpt-oss's own rope scaling (factor 32 over 4096, the correction range unrounded). */
    static final String YARN = "\"rope_scaling\": {\"beta_fast\": 32.0, \"beta_slow\": 1.0, \"factor\": 32.0, "
            + "\"original_max_position_embeddings\": 4096, \"rope_type\": \"yarn\", \"truncate\": false}, ";

    /** A published checkpoint's quantization_config. */
    static final String MXFP4 = "\"quantization_config\": {\"quant_method\": \"mxfp4\", \"modules_to_not_convert\": "
            + "[\"model.layers.*.self_attn\", \"model.layers.*.mlp.router\", \"model.embed_tokens\", \"lm_head\"]}, ";

    /** The float tensors: the expert weights as well unless {@code mxfp4} (then they are {@link #mxfp4Experts}). */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, boolean mxfp4) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            for (String n : List.of("q", "k", "v")) {
                long rows = (n.equals("q") ? HEADS : KV_HEADS) * (long) HEAD;
                shapes.put(p + "self_attn." + n + "_proj.weight", new long[]{rows, HIDDEN});
                shapes.put(p + "self_attn." + n + "_proj.bias", new long[]{rows});
            }
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD});
            shapes.put(p + "self_attn.o_proj.bias", new long[]{HIDDEN});
            shapes.put(p + "self_attn.sinks", new long[]{HEADS});
            shapes.put(p + "mlp.router.weight", new long[]{EXPERTS, HIDDEN});
            shapes.put(p + "mlp.router.bias", new long[]{EXPERTS});
            shapes.put(p + "mlp.experts.gate_up_proj_bias", new long[]{EXPERTS, 2 * WIDTH});
            shapes.put(p + "mlp.experts.down_proj_bias", new long[]{EXPERTS, HIDDEN});
            if (!mxfp4) {
                shapes.put(p + "mlp.experts.gate_up_proj", new long[]{EXPERTS, HIDDEN, 2 * WIDTH});
                shapes.put(p + "mlp.experts.down_proj", new long[]{EXPERTS, WIDTH, HIDDEN});
            }
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    /** The MXFP4 experts as the published checkpoint stores them: random codes, exponents 118..130. */
    static Map<String, ReferenceSafetensors.Tensor> mxfp4Experts(long seed) {
        Random r = new Random(seed);
        Map<String, ReferenceSafetensors.Tensor> out = new TreeMap<>();
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".mlp.experts.";
            for (String proj : List.of("gate_up_proj", "down_proj")) {
                long rows = proj.equals("down_proj") ? HIDDEN : 2 * WIDTH, groups = (proj.equals("down_proj") ? WIDTH : HIDDEN) / 32;
                byte[] blocks = new byte[(int) (EXPERTS * rows * groups * 16)], scales = new byte[(int) (EXPERTS * rows * groups)];
                r.nextBytes(blocks);
                for (int k = 0; k < scales.length; k++) scales[k] = (byte) (118 + r.nextInt(13));
                out.put(p + proj + "_blocks", new ReferenceSafetensors.Tensor("U8", new long[]{EXPERTS, rows, groups, 16}, blocks));
                out.put(p + proj + "_scales", new ReferenceSafetensors.Tensor("U8", new long[]{EXPERTS, rows, groups}, scales));
            }
        }
        return out;
    }

    /** A published-style folder: BF16 floats ({@code bf16}) or F32, MXFP4 experts. */
    static Map<String, ReferenceSafetensors.Tensor> mxfp4Folder(long seed, boolean bf16) {
        Map<String, ReferenceSafetensors.Tensor> t = new TreeMap<>(bf16 ? ConverterParityTest.as("BF16", tensors(seed, true)) : tensors(seed, true));
        t.putAll(mxfp4Experts(seed + 1));
        return t;
    }

    /** {@code amn convert DIR --to gguf --dtype DTYPE -o OUT --no-vocab}, not quiet: the summary and its notes. */
    private static CorpusCliTest.Run loud(Path dir, String dtype, Path out) {
        return CorpusCliTest.amn("convert", dir.toString(), "--to", "gguf", "--dtype", dtype, "-o", out.toString(), "--no-vocab");
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    private static final float[] E2M1 = {0f, 0.5f, 1f, 1.5f, 2f, 3f, 4f, 6f, -0f, -0.5f, -1f, -1.5f, -2f, -3f, -4f, -6f};

    /**
     * transformers' reading of MXFP4 blocks {@code [E, R, G, 16]} and scales {@code [E, R, G]}
     * ({@code convert_moe_packed_tensors}, before its transpose): value {@code 32 g + 2 j} of row
     * {@code (e, r)} is the low nibble of byte {@code j}, {@code 32 g + 2 j + 1} its high one,
     * times 2^(scale - 127).
     */
    static float transformersValue(ReferenceSafetensors.Tensor blocks, ReferenceSafetensors.Tensor scales, long e, long r, int k) {
        long rows = blocks.shape()[1], groups = blocks.shape()[2];
        long block = (e * rows + r) * groups + k / 32;
        int b = blocks.bytes()[(int) (block * 16 + (k % 32) / 2)];
        return Math.scalb(E2M1[(k % 2 == 0 ? b : b >> 4) & 0xF], (scales.bytes()[(int) block] & 0xFF) - 127);
    }

    /** ggml's reading of an MXFP4 row-major tensor's element {@code index} (block_mxfp4: e, then qs[16]; value j low nibble, j + 16 high). */
    static float ggmlValue(byte[] data, long index) {
        long block = index / 32;
        int j = (int) (index % 32), at = (int) (block * 17);
        int code = (data[at + 1 + j % 16] >> (j < 16 ? 0 : 4)) & 0xF;
        return Math.scalb(2 * E2M1[code], (data[at] & 0xFF) - 127) / 2;
    }

    @Test
    void mxfp4ExpertsAreWrittenAsMxfp4WithTheirValuesFirstInTheFile() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = mxfp4Folder(71, true);
        Path out = tmp.resolve("oss.gguf");
        CorpusCliTest.Run r = loud(folder("gpt-oss-mxfp4", config(MXFP4), in), "f16", out);
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out() + r.err()).contains("written as MXFP4, not recovered").doesNotContain("recovered (MXFP4");
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("gpt-oss");
        // MOSTLY_MXFP4_MOE, as the converter's prepare_metadata sets it for an mxfp4 checkpoint at f16
        assertThat(g.kv.get("general.file_type").asLong()).isEqualTo(38);
        assertThat(g.kv.get("gpt-oss.expert_count").asLong()).isEqualTo(EXPERTS);
        assertThat(g.kv.get("gpt-oss.expert_used_count").asLong()).isEqualTo(2);
        assertThat(g.kv.get("gpt-oss.expert_feed_forward_length").asLong()).isEqualTo(WIDTH);
        assertThat(g.kv.get("gpt-oss.attention.sliding_window").asLong()).isEqualTo(128);
        // generate_extra_tensors writes them first: per block down, gate, up
        assertThat(g.tensors.subList(0, 6).stream().map(ReferenceGguf.Tensor::name)).containsExactly(
                "blk.0.ffn_down_exps.weight", "blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight",
                "blk.1.ffn_down_exps.weight", "blk.1.ffn_gate_exps.weight", "blk.1.ffn_up_exps.weight");
        for (int bid = 0; bid < LAYERS; bid++) {
            String p = "model.layers." + bid + ".mlp.experts.";
            for (String proj : List.of("gate", "up", "down")) {
                ReferenceGguf.Tensor t = g.tensor("blk." + bid + ".ffn_" + proj + "_exps.weight");
                assertThat(t.type()).as(t.name()).isEqualTo(39);
                boolean down = proj.equals("down");
                long rows = down ? HIDDEN : WIDTH, cols = down ? WIDTH : HIDDEN;
                assertThat(t.ne()).containsExactly(cols, rows, EXPERTS);
                String from = p + (down ? "down_proj" : "gate_up_proj");
                // row j of gate is the checkpoint's row 2j, of up 2j + 1 (transformers' gate = [..., ::2] after its transpose)
                for (long e = 0; e < EXPERTS; e++) {
                    for (long j = 0; j < rows; j++) {
                        long src = down ? j : 2 * j + (proj.equals("up") ? 1 : 0);
                        for (int k = 0; k < cols; k++) {
                            float want = transformersValue(in.get(from + "_blocks"), in.get(from + "_scales"), e, src, k);
                            float got = ggmlValue(t.bytes(), (e * rows + j) * cols + k);
                            assertThat(Float.floatToRawIntBits(got)).as("%s e %d row %d col %d", t.name(), e, j, k)
                                    .isEqualTo(Float.floatToRawIntBits(want));
                        }
                    }
                }
            }
            // the biases split as gate and up are, F32 whatever the output type
            ReferenceGguf.Tensor upBias = g.tensor("blk." + bid + ".ffn_up_exps.bias");
            assertThat(upBias.type()).isZero();
            assertThat(upBias.ne()).containsExactly(WIDTH, EXPERTS);
            assertThat(f32(upBias.bytes(), 1)).isEqualTo(bf16At(in.get(p + "gate_up_proj_bias"), 1 + 2));
        }
        assertThat(g.tensor("blk.0.attn_sinks.weight").type()).isZero();
        assertThat(g.tensor("blk.0.attn_sinks.weight").ne()).containsExactly(HEADS);
        assertThat(g.tensor("blk.1.ffn_gate_inp.weight").type()).isZero();
        assertThat(g.tensor("blk.1.ffn_gate_inp.bias").type()).isZero();
        assertThat(g.tensor("blk.1.post_attention_norm.weight").type()).isZero();
        assertThat(g.tensor("blk.1.attn_q.weight").type()).isEqualTo(1);
    }

    /**
     * The corpus's gpt-oss MXFP4 case, whose expected tensors are transformers' own
     * {@code convert_moe_packed_tensors} output ({@code [experts, in, out]}), as the experts of a
     * one-layer gpt-oss folder: every value of the MXFP4 GGUF tensors, read as ggml defines
     * MXFP4, is transformers' value of the same weight, gate and up taken apart and transposed.
     */
    @Test
    void theMxfp4ExpertsAreTransformersOwnDequantization() throws IOException {
        Optional<Path> root = CorpusCase.root();
        Assumptions.assumeTrue(root.isPresent(), "corpus absent: transformers' own MXFP4 output not compared");
        Path c = root.get().resolve("mxfp4/gen-gpt-oss-experts-with-biases");
        Assumptions.assumeTrue(Files.isDirectory(c), "corpus case mxfp4/gen-gpt-oss-experts-with-biases absent");
        Map<String, ReferenceSafetensors.Tensor> input = ReferenceSafetensors.read(c.resolve("input.safetensors"));
        Map<String, ReferenceSafetensors.Tensor> expected = ReferenceSafetensors.read(c.resolve("expected.safetensors"));
        int experts = 2, hidden = 256, width = 32, heads = 4, kv = 2, head = 64;
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, hidden});
        shapes.put("lm_head.weight", new long[]{VOCAB, hidden});
        shapes.put("model.norm.weight", new long[]{hidden});
        String p = "model.layers.0.";
        shapes.put(p + "input_layernorm.weight", new long[]{hidden});
        shapes.put(p + "post_attention_layernorm.weight", new long[]{hidden});
        for (String n : List.of("q", "k", "v")) {
            long rows = (long) (n.equals("q") ? heads : kv) * head;
            shapes.put(p + "self_attn." + n + "_proj.weight", new long[]{rows, hidden});
            shapes.put(p + "self_attn." + n + "_proj.bias", new long[]{rows});
        }
        shapes.put(p + "self_attn.o_proj.weight", new long[]{hidden, (long) heads * head});
        shapes.put(p + "self_attn.o_proj.bias", new long[]{hidden});
        shapes.put(p + "self_attn.sinks", new long[]{heads});
        Map<String, ReferenceSafetensors.Tensor> t = new TreeMap<>(DecoderReference.randomF32(shapes, new Random(79)));
        t.putAll(input);
        String config = config(MXFP4).replace("\"hidden_size\": " + HIDDEN, "\"hidden_size\": " + hidden)
                .replace("\"intermediate_size\": " + WIDTH, "\"intermediate_size\": " + width)
                .replace("\"num_hidden_layers\": " + LAYERS, "\"num_hidden_layers\": 1")
                .replace("\"head_dim\": " + HEAD, "\"head_dim\": " + head)
                .replace("\"num_local_experts\": " + EXPERTS, "\"num_local_experts\": " + experts)
                .replace("\"layer_types\": [\"sliding_attention\", \"full_attention\"]", "\"layer_types\": [\"sliding_attention\"]");
        Path out = tmp.resolve("corpus-oss.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("gpt-oss-corpus", config, t), "bf16", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        ByteBuffer gateUp = ByteBuffer.wrap(expected.get(p + "mlp.experts.gate_up_proj").bytes()).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer down = ByteBuffer.wrap(expected.get(p + "mlp.experts.down_proj").bytes()).order(ByteOrder.LITTLE_ENDIAN);
        byte[] gate = g.tensor("blk.0.ffn_gate_exps.weight").bytes(), up = g.tensor("blk.0.ffn_up_exps.weight").bytes(),
                dn = g.tensor("blk.0.ffn_down_exps.weight").bytes();
        for (int e = 0; e < experts; e++) {
            for (int j = 0; j < width; j++) {
                for (int i = 0; i < hidden; i++) {
                    // transformers' gate_up_proj [E, hidden, 2 width]: gate column 2j, up 2j + 1
                    int at = (e * hidden + i) * 2 * width + 2 * j;
                    assertThat(ggmlValue(gate, (long) (e * width + j) * hidden + i)).isEqualTo(gateUp.getFloat(4 * at));
                    assertThat(ggmlValue(up, (long) (e * width + j) * hidden + i)).isEqualTo(gateUp.getFloat(4 * (at + 1)));
                    // down_proj [E, width, hidden]: (e, j, i) is ffn_down_exps' row i, column j
                    assertThat(ggmlValue(dn, (long) (e * hidden + i) * width + j)).isEqualTo(down.getFloat(4 * ((e * width + j) * hidden + i)));
                }
            }
        }
    }

    private static float f32(byte[] b, int index) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getFloat(4 * index);
    }

    private static float bf16At(ReferenceSafetensors.Tensor t, int index) {
        int h = ByteBuffer.wrap(t.bytes()).order(ByteOrder.LITTLE_ENDIAN).getShort(2 * index) & 0xFFFF;
        return Float.intBitsToFloat(h << 16);
    }

    @Test
    void denseExpertsAreSplitAndTransposed() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(72, false);
        Path out = tmp.resolve("dense.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("gpt-oss-dense", config(""), in), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.file_type").asLong()).isZero();
        ByteBuffer gateUp = ByteBuffer.wrap(in.get("model.layers.1.mlp.experts.gate_up_proj").bytes()).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer downIn = ByteBuffer.wrap(in.get("model.layers.1.mlp.experts.down_proj").bytes()).order(ByteOrder.LITTLE_ENDIAN);
        ReferenceGguf.Tensor gate = g.tensor("blk.1.ffn_gate_exps.weight"), up = g.tensor("blk.1.ffn_up_exps.weight"),
                down = g.tensor("blk.1.ffn_down_exps.weight");
        assertThat(gate.ne()).containsExactly(HIDDEN, WIDTH, EXPERTS);
        assertThat(down.ne()).containsExactly(WIDTH, HIDDEN, EXPERTS);
        for (int e = 0; e < EXPERTS; e++) {
            for (int j = 0; j < WIDTH; j++) {
                for (int i = 0; i < HIDDEN; i++) {
                    // gate_up_proj [E, hidden, 2 width]: (e, i, 2j) is gate's (e, j, i), (e, i, 2j + 1) up's
                    int at = (e * HIDDEN + i) * 2 * WIDTH + 2 * j;
                    assertThat(f32(gate.bytes(), (e * WIDTH + j) * HIDDEN + i)).isEqualTo(gateUp.getFloat(4 * at));
                    assertThat(f32(up.bytes(), (e * WIDTH + j) * HIDDEN + i)).isEqualTo(gateUp.getFloat(4 * (at + 1)));
                    // down_proj [E, width, hidden]: (e, j, i) is ffn_down_exps' (e, i, j)
                    assertThat(f32(down.bytes(), (e * HIDDEN + i) * WIDTH + j)).isEqualTo(downIn.getFloat(4 * ((e * WIDTH + j) * HIDDEN + i)));
                }
            }
        }
    }

    /** gpt-oss's yarn declares truncate false; llama.cpp rounds the range all the same: converted as the converter does, said. */
    @Test
    void yarnWithTruncateFalseIsConvertedAndSaidOf() throws IOException {
        Path out = tmp.resolve("yarn.gguf");
        CorpusCliTest.Run r = loud(folder("gpt-oss-yarn", config(YARN), tensors(73, false)), "bf16", out);
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out() + r.err()).contains("truncate false");
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("gpt-oss.rope.scaling.type").asString()).isEqualTo("yarn");
        assertThat(g.kv.get("gpt-oss.rope.scaling.original_context_length").asLong()).isEqualTo(4096);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            // llama.cpp's gpt-oss clamps at 7 whatever the file says
            "\"swiglu_limit\": 7.0|\"swiglu_limit\": 10.0|6|swiglu_limit",
            // its layers alternate local and global from layer 0
            "[\"sliding_attention\", \"full_attention\"]|[\"full_attention\", \"sliding_attention\"]|6|layer_types",
            // the experts' width disagrees with gate_up_proj's columns
            "\"intermediate_size\": 64|\"intermediate_size\": 48|3|intermediate_size",
            // one router row per expert
            "\"num_local_experts\": 4|\"num_local_experts\": 5|3|num_local_experts"})
    void badConfigsAreRefusedNamingTheKey(String from, String to, int exit, String named) throws IOException {
        Path out = tmp.resolve("bad.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("gpt-oss-bad", config("").replace(from, to), tensors(74, false)), "f16",
                out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(exit);
        assertThat(r.err()).contains(named).doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    @Test
    void mxfp4BlocksOfTheWrongShapeAreRefused() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = mxfp4Folder(75, false);
        ReferenceSafetensors.Tensor scales = in.get("model.layers.0.mlp.experts.down_proj_scales");
        // scales for half the experts only: blocks and scales no longer pair up
        in.put("model.layers.0.mlp.experts.down_proj_scales", new ReferenceSafetensors.Tensor("U8",
                new long[]{EXPERTS / 2, HIDDEN, WIDTH / 32}, java.util.Arrays.copyOf(scales.bytes(), scales.bytes().length / 2)));
        Path out = tmp.resolve("blocks.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("gpt-oss-blocks", config(MXFP4), in), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("down_proj_scales").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass (F32 within 1e-4 relative, measured
     * 2.5e-7; F16 3e-3, measured 1.7e-3); without the sinks, the sliding window or the experts'
     * biases, or with gate and up swapped, more than 0.2 relative off (measured 0.28 to 1.2).
     */
    @ParameterizedTest
    @CsvSource({"f32,", "f16,", "f32,--variant no-sinks", "f32,--variant no-window", "f32,--mutate swap-gate-up",
            "f32,--mutate no-expert-bias"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String wrong) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, "gpt-oss", List.of("--tokenizer", tok.get().toString(), "--seed", "11"),
                dtype, wrong == null ? null : List.of(wrong.split(" ")), 0.2);
    }

    /**
     * gpt-oss's yarn, with the range rounded as llama.cpp rounds it (truncate true in the
     * reference's config): within 1e-4 of the reference, so the yarn keys are the ones llama.cpp
     * runs gpt-oss with.
     */
    @Test
    void llamaCppComputesTheReferenceWithYarn() throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.oracles();
        Path dir = tmp.resolve("gpt-oss-yarn-forward");
        DecoderReference.make(tmp, "gpt-oss", dir.toString(), "--tokenizer", tok.get().toString(), "--seed", "12", "--yarn", "16",
                "--yarn-factor", "8");
        Path config = dir.resolve("config.json");
        Files.writeString(config, Files.readString(config).replace("\"truncate\": false", "\"truncate\": true"));
        Path out = tmp.resolve("gpt-oss-yarn.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f32", out, true);
        assertThat(r.code()).as(r.err()).isZero();
        var cmp = DecoderReference.compare(tmp, dir, out, "f32", "1,7,42,100,3,250,17,64,5,9,200,300");
        assertThat(cmp.path("kv_f16").path("argmax").asInt()).as(cmp.toString()).isEqualTo(cmp.path("llama_argmax").asInt());
        assertThat(cmp.path("kv_f16").path("max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(1e-4);
        var unscaled = DecoderReference.compare(tmp, dir, out, "f32", "1,7,42,100,3,250,17,64,5,9,200,300", "--no-rope-scaling");
        assertThat(unscaled.path("kv_f16").path("max_rel_diff").asDouble()).as("the scaling shows: " + unscaled).isGreaterThan(0.3);
    }

    /**
     * An MXFP4 folder through llama.cpp: it loads and computes what the reference computes to
     * within what ggml's 8-bit quantization of the activations it multiplies MXFP4 weights with
     * costs (measured 4.4e-2 relative, the argmax the same); a wrong nibble order is several units off.
     */
    @Test
    void llamaCppRunsTheMxfp4Experts() throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.oracles();
        Path dir = tmp.resolve("gpt-oss-mxfp4-forward");
        DecoderReference.make(tmp, "gpt-oss", dir.toString(), "--tokenizer", tok.get().toString(), "--seed", "13", "--mxfp4");
        Path out = tmp.resolve("gpt-oss-mxfp4.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f32", out, true);
        assertThat(r.code()).as(r.err()).isZero();
        var cmp = DecoderReference.compare(tmp, dir, out, "f32", "1,7,42,100,3,250,17,64,5,9,200,300");
        assertThat(cmp.path("model_desc").asText()).contains("MXFP4");
        assertThat(cmp.path("kv_f16").path("argmax").asInt()).as(cmp.toString()).isEqualTo(cmp.path("llama_argmax").asInt());
        assertThat(cmp.path("kv_f16").path("max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(0.15);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        List<ConverterParityTest.Folder> f = new ArrayList<>();
        f.add(new ConverterParityTest.Folder("gpt-oss-tiny", config(YARN), tensors(76, false), all));
        f.add(new ConverterParityTest.Folder("gpt-oss-tiny-bf16", config(""), ConverterParityTest.as("BF16", tensors(77, false)), withAuto));
        f.add(new ConverterParityTest.Folder("gpt-oss-mxfp4-tiny", config(YARN + MXFP4), mxfp4Folder(78, true), withAuto));
        f.add(new ConverterParityTest.Folder("gpt-oss-mxfp4-f32-tiny", config(MXFP4), mxfp4Folder(80, false), all));
        return f;
    }
}
