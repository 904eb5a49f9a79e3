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
 * TII's Falcon folders ({@code FalconForCausalLM}, and {@code RWForCausalLM} with its older keys) to GGUF as the
 * converter's {@code FalconModel} writes them: the fused q/k/v re-laid from groups (each group's queries, then its key
 * and value head) to every query, key, then value; one LayerNorm a block (7B) or two (40B's new decoder
 * architecture); its own keys (context length 2048, the "jploski" layout, the key/value heads); the bad inputs.
 * {@link ConverterParityTest} compares such folders with the converter's own files; with the oracles
 * ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's logits are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class FalconToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, LAYERS = 2, HEADS = 8, D = HIDDEN / HEADS;

    @TempDir
    Path tmp;

    /** falcon-7b's config.json (multi-query), or falcon-40b's ({@code newArch}: {@code kv} groups), sizes shrunk. */
    static String config(boolean newArch, int kv, String extra) {
        return "{\"alibi\": false, \"architectures\": [\"FalconForCausalLM\"], \"bias\": false, \"bos_token_id\": 11, "
                + "\"eos_token_id\": 11, \"hidden_size\": " + HIDDEN + ", \"layer_norm_epsilon\": 1e-05, \"model_type\": \"falcon\", "
                + "\"multi_query\": " + !newArch + ", \"new_decoder_architecture\": " + newArch + ", "
                + (newArch ? "\"num_kv_heads\": " + kv + ", " : "") + extra
                + "\"num_attention_heads\": " + HEADS + ", \"num_hidden_layers\": " + LAYERS + ", \"parallel_attn\": true, "
                + "\"rope_theta\": 10000.0, \"vocab_size\": " + VOCAB + "}";
    }

    /** The tensors of a tiny random Falcon as F32, in name order: {@code kv} key/value heads, two norms a block when {@code newArch}. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, boolean newArch, int kv) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("transformer.word_embeddings.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("transformer.ln_f.weight", new long[]{HIDDEN});
        shapes.put("transformer.ln_f.bias", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "transformer.h." + i + ".";
            for (String n : newArch ? List.of("ln_attn", "ln_mlp") : List.of("input_layernorm")) {
                shapes.put(p + n + ".weight", new long[]{HIDDEN});
                shapes.put(p + n + ".bias", new long[]{HIDDEN});
            }
            shapes.put(p + "self_attention.query_key_value.weight", new long[]{(long) (HEADS + 2 * kv) * D, HIDDEN});
            shapes.put(p + "self_attention.dense.weight", new long[]{HIDDEN, HIDDEN});
            shapes.put(p + "mlp.dense_h_to_4h.weight", new long[]{4L * HIDDEN, HIDDEN});
            shapes.put(p + "mlp.dense_4h_to_h.weight", new long[]{HIDDEN, 4L * HIDDEN});
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    private static float at(byte[] b, long i) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getFloat(Math.toIntExact(4 * i));
    }

    @Test
    void theGroupedQkvReLaidAndItsOwnKeys() throws IOException {
        int kv = 2, per = HEADS / kv;
        Map<String, ReferenceSafetensors.Tensor> in = tensors(311, true, kv);
        Path out = tmp.resolve("falcon.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("falcon-40b-tiny", config(true, kv, ""), in), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "falcon";
        // FalconModel.set_gguf_parameters' keys in its order
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence(a + ".context_length", a + ".tensor_data_layout",
                a + ".embedding_length", a + ".feed_forward_length", a + ".block_count", a + ".attention.head_count",
                a + ".attention.head_count_kv", a + ".attention.layer_norm_epsilon", "general.file_type")
                .doesNotContain(a + ".rope.freq_base");
        assertThat(g.kv.get(a + ".context_length").asLong()).isEqualTo(2048);
        assertThat(g.kv.get(a + ".tensor_data_layout").asString()).isEqualTo("jploski");
        assertThat(g.kv.get(a + ".attention.head_count_kv").asLong()).isEqualTo(kv);
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name).toList()).contains("blk.0.attn_norm_2.bias", "blk.1.attn_norm.weight");
        // stored group g's query i, key, value (rows of [kv, per + 2, D]) written at query g*per+i, key g, value g
        byte[] stored = in.get("transformer.h.1.self_attention.query_key_value.weight").bytes(),
                written = g.tensor("blk.1.attn_qkv.weight").bytes();
        for (int grp = 0; grp < kv; grp++) {
            for (int j = 0; j < D; j++) {
                for (int i = 0; i < per; i++) {
                    long outRow = (long) (grp * per + i) * D + j, inRow = ((long) grp * (per + 2) + i) * D + j;
                    assertThat(at(written, outRow * HIDDEN + 5)).isEqualTo(at(stored, inRow * HIDDEN + 5));
                }
                long keyOut = (long) (HEADS + grp) * D + j, valueOut = (long) (HEADS + kv + grp) * D + j;
                assertThat(at(written, keyOut * HIDDEN + 7)).isEqualTo(at(stored, (((long) grp * (per + 2) + per) * D + j) * HIDDEN + 7));
                assertThat(at(written, valueOut * HIDDEN)).isEqualTo(at(stored, (((long) grp * (per + 2) + per + 1) * D + j) * HIDDEN));
            }
        }
        // falcon-7b's multi-query layout: one key/value head (the converter's default when config.json names none)
        Path seven = tmp.resolve("seven.gguf");
        assertThat(DecoderReference.convert(folder("falcon-7b-tiny", config(false, 1, ""), tensors(312, false, 1)), "f16", seven, false)
                .code()).isZero();
        assertThat(ReferenceGguf.read(seven).kv.get(a + ".attention.head_count_kv").asLong()).isEqualTo(1);
    }

    /** RWForCausalLM's older keys ({@code n_head}, {@code n_head_kv}, {@code n_layer}) give the same file as the new ones. */
    @Test
    void theRemoteCodeClassWithItsOlderKeys() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(313, true, 2);
        String now = config(true, 2, "");
        String rw = now.replace("FalconForCausalLM", "RWForCausalLM").replace("\"num_kv_heads\"", "\"n_head_kv\"")
                .replace("\"num_attention_heads\"", "\"n_head\"").replace("\"num_hidden_layers\"", "\"n_layer\"");
        Path a = tmp.resolve("a.gguf"), b = tmp.resolve("b.gguf");
        assertThat(DecoderReference.convert(folder("x/falcon-40b-tiny", now, in), "f16", a, false).code()).isZero();
        CorpusCliTest.Run r = DecoderReference.convert(folder("y/falcon-40b-tiny", rw, in), "f16", b, false);
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(Files.readAllBytes(b)).isEqualTo(Files.readAllBytes(a));
    }

    /** What llama.cpp's falcon would compute otherwise or the re-layout would scramble (exit 6); shapes config.json does not give (exit 3). */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"alibi\": false|\"alibi\": true|6|alibi",
            "\"bias\": false|\"bias\": true|6|bias",
            "\"parallel_attn\": true|\"parallel_attn\": false|6|parallel_attn",
            "\"multi_query\": true|\"multi_query\": false|6|multi_query",
            "\"rope_theta\": 10000.0|\"rope_theta\": 500000.0|6|rope_theta",
            "\"hidden_size\": 32|\"hidden_size\": 48|3|hidden_size"})
    void whatDoesNotFitIsRefused(String from, String to, int exit, String key) throws IOException {
        DecoderReference.refused(tmp, config(false, 1, ""), from, to, tensors(314, false, 1), exit, key);
    }

    /** Key/value groups that do not divide the heads, or a fused q/k/v of another count of them: exit 3 naming num_kv_heads. */
    @Test
    void groupsThatDoNotFitAreMalformed() throws IOException {
        Path out = tmp.resolve("bad.gguf");
        CorpusCliTest.Run three = DecoderReference.convert(folder("falcon-3", config(true, 3, ""), tensors(315, true, 2)), "f16", out, false);
        assertThat(three.code()).as(three.err()).isEqualTo(3);
        assertThat(three.err()).contains("num_kv_heads").doesNotContain("Exception");
        CorpusCliTest.Run four = DecoderReference.convert(folder("falcon-4", config(true, 4, ""), tensors(316, true, 2)), "f16", out, false);
        assertThat(four.code()).as(four.err()).isEqualTo(3);
        assertThat(four.err()).contains("num_kv_heads").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass computed with llama.cpp's GELU (tanh, from ggml's F16
     * table): F32 within 1e-4 of the largest logit (measured 1.3e-5 multi-query, 3.5e-5 grouped on these 12 tokens;
     * 1.1e-6 on the first 8, past which llama.cpp's grouped attention takes another product path), F16 3e-3 (1.3e-3,
     * 1.7e-3). transformers' exact GELU is 4.6e-4 to 6.1e-4 apart (llama.cpp's approximation, in every converter's file
     * too); the grouped q/k/v read as three blocks of the stored rows (a file that did not re-lay them) 0.93.
     */
    @ParameterizedTest
    @CsvSource({"f32, ", "f16, ", "f32, --new-arch", "f16, --new-arch"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String newArch) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.oracles();
        Path dir = tmp.resolve("falcon-forward");
        List<String> make = new ArrayList<>(List.of("falcon", dir.toString(), "--tokenizer", tok.get().toString(), "--seed", "3"));
        if (newArch != null) make.add(newArch);
        DecoderReference.make(tmp, make.toArray(String[]::new));
        Path out = tmp.resolve("falcon-" + dtype + ".gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, dtype, out, true);
        assertThat(r.code()).as(r.err()).isZero();
        String tokens = "1,7,42,100,3,250,17,64,5,9,200,300";
        JsonNode llamaGelu = DecoderReference.compare(tmp, dir, out, dtype, tokens, "--variant", "gelu-tanh").path("kv_f16");
        JsonNode exact = DecoderReference.compare(tmp, dir, out, dtype, tokens).path("kv_f16");
        assertThat(llamaGelu.path("max_rel_diff").asDouble()).as(llamaGelu.toString()).isLessThan(dtype.equals("f32") ? 1e-4 : 3e-3);
        assertThat(exact.path("max_rel_diff").asDouble()).as("transformers' exact GELU: " + exact).isLessThan(3e-3);
        if (newArch != null) {
            JsonNode blocks = DecoderReference.compare(tmp, dir, out, dtype, tokens, "--variant", "qkv-blocks").path("kv_f16");
            assertThat(blocks.path("max_rel_diff").asDouble()).as("q/k/v not re-laid: " + blocks).isGreaterThan(0.1);
        }
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("falcon-7b-tiny", config(false, 1, ""), tensors(317, false, 1), all),
                new ConverterParityTest.Folder("falcon-40b-tiny-bf16", config(true, 2, ""), ConverterParityTest.as("BF16", tensors(318, true, 2)),
                        withAuto));
    }
}
