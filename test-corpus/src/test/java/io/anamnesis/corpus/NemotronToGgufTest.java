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
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * NVIDIA's Nemotron folders ({@code NemotronForCausalLM}) to GGUF as the converter's {@code NemotronModel} writes them:
 * llama's names with LayerNorm weights and biases, the weights shifted by 1 (LayerNorm1P), an up/down MLP, no
 * permutation, TextModel's keys then its own, the SentencePiece vocabulary with padding id 0 and unknown id 1; the bad
 * inputs. {@link ConverterParityTest} compares such folders with the converter's own files; with the oracles
 * ({@code ORACLE_CACHE}) and the corpus's SentencePiece model, llama.cpp's logits are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class NemotronToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, FF = 96, LAYERS = 2, HEADS = 4, KV = 2;

    @TempDir
    Path tmp;

    /** Nemotron-Mini-4B-Instruct's config.json shape, sizes shrunk (heads of 8, half of each rotated). */
    static String config() {
        return "{\"architectures\": [\"NemotronForCausalLM\"], \"attention_bias\": false, \"bos_token_id\": 2, \"eos_token_id\": 3, "
                + "\"head_dim\": " + HIDDEN / HEADS + ", \"hidden_act\": \"relu2\", \"hidden_size\": " + HIDDEN + ", "
                + "\"intermediate_size\": " + FF + ", \"max_position_embeddings\": 4096, \"mlp_bias\": false, "
                + "\"model_type\": \"nemotron\", \"norm_eps\": 1e-05, \"num_attention_heads\": " + HEADS + ", "
                + "\"num_hidden_layers\": " + LAYERS + ", \"num_key_value_heads\": " + KV + ", \"partial_rotary_factor\": 0.5, "
                + "\"rope_theta\": 10000, \"tie_word_embeddings\": false, \"vocab_size\": " + VOCAB + "}";
    }

    /** The tensors of a tiny random Nemotron as F32 under llama's names, with LayerNorm biases and no gate. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed) {
        Map<String, long[]> shapes = new TreeMap<>();
        int d = HIDDEN / HEADS;
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        shapes.put("model.norm.bias", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            for (String n : List.of("input_layernorm", "post_attention_layernorm")) {
                shapes.put(p + n + ".weight", new long[]{HIDDEN});
                shapes.put(p + n + ".bias", new long[]{HIDDEN});
            }
            for (String n : List.of("q", "k", "v")) {
                shapes.put(p + "self_attn." + n + "_proj.weight", new long[]{(n.equals("q") ? HEADS : KV) * (long) d, HIDDEN});
            }
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * d});
            shapes.put(p + "mlp.up_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    @Test
    void textModelsKeysThenItsOwnAndTheNormsShifted() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(501);
        Path out = tmp.resolve("nemotron.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("Nemotron-Mini-tiny", config(), in), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "nemotron";
        // TextModel's (norm_eps read as an RMS epsilon there), then vocab_size, the LayerNorm epsilon, the rope count, none
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence(a + ".block_count", a + ".context_length", a + ".embedding_length",
                a + ".feed_forward_length", a + ".attention.head_count", a + ".attention.head_count_kv", a + ".rope.freq_base",
                a + ".attention.layer_norm_rms_epsilon", a + ".attention.key_length", "general.file_type", a + ".vocab_size",
                a + ".attention.layer_norm_epsilon", a + ".rope.dimension_count", a + ".rope.scaling.type");
        assertThat(g.kv.get(a + ".rope.dimension_count").asLong()).as("int(0.5 x 32) // 4").isEqualTo(4);
        assertThat(g.kv.get(a + ".rope.scaling.type").asString()).isEqualTo("none");
        // LayerNorm1P: 1 + w in float32, element by element; biases and projections as stored
        for (String[] n : new String[][]{{"model.layers.1.input_layernorm.weight", "blk.1.attn_norm.weight"},
                {"model.layers.0.post_attention_layernorm.weight", "blk.0.ffn_norm.weight"}, {"model.norm.weight", "output_norm.weight"}}) {
            FloatBuf want = new FloatBuf(in.get(n[0]).bytes()), got = new FloatBuf(g.tensor(n[1]).bytes());
            for (int i = 0; i < HIDDEN; i++) assertThat(got.at(i)).as(n[1] + "[" + i + "]").isEqualTo(want.at(i) + 1f);
        }
        assertThat(g.tensor("blk.1.attn_norm.bias").bytes()).isEqualTo(in.get("model.layers.1.input_layernorm.bias").bytes());
        assertThat(g.tensor("blk.0.attn_q.weight").bytes()).isEqualTo(in.get("model.layers.0.self_attn.q_proj.weight").bytes());
        assertThat(g.tensor("blk.1.ffn_up.weight").bytes()).isEqualTo(in.get("model.layers.1.mlp.up_proj.weight").bytes());
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name)).contains("output.weight", "output_norm.bias")
                .noneMatch(n -> n.contains("ffn_gate"));
    }

    /** NemotronModel.set_vocab: _set_vocab_sentencepiece, then padding id 0 and unknown id 1. */
    @Test
    void theSentencePieceVocabularyWithPaddingZeroAndUnknownOne() throws IOException {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's hf-to-gguf SentencePiece tokenizer.model is not here: not checked");
        Path dir = folder("Nemotron-vocab", config(), tensors(502));
        Files.copy(sp.get(), dir.resolve("tokenizer.model"));
        Path out = tmp.resolve("vocab.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", out, true);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("tokenizer.ggml.model").asString()).isEqualTo("llama");
        assertThat(g.kv.get("tokenizer.ggml.padding_token_id").asLong()).isZero();
        assertThat(g.kv.get("tokenizer.ggml.unknown_token_id").asLong()).isEqualTo(1);
    }

    /** What llama.cpp's nemotron would not compute or is not converted (exit 6); what config.json gives wrong (exit 3). */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"hidden_act\": \"relu2\"|\"hidden_act\": \"silu\"|6|hidden_act",
            "\"attention_bias\": false|\"attention_bias\": true|6|attention_bias",
            "\"mlp_bias\": false|\"mlp_bias\": true|6|mlp_bias",
            "\"rope_theta\": 10000|\"rope_theta\": 10000, \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}|6|rope_scaling",
            "\"head_dim\": 8|\"head_dim\": 16|6|head_dim",
            "\"partial_rotary_factor\": 0.5, ||3|partial_rotary_factor",
            "\"norm_eps\": 1e-05, ||3|layer_norm_eps",
            "\"intermediate_size\": 96|\"intermediate_size\": 64|3|intermediate_size"})
    void whatDoesNotFitIsRefused(String from, String to, int exit, String key) throws IOException {
        DecoderReference.refused(tmp, config(), from, to, tensors(503), exit, key);
    }

    /**
     * llama.cpp's logits against the reference forward pass (LayerNorm1P, the partial rope, squared ReLU), 12 tokens:
     * F32 within 1e-4 of the largest logit (measured 7.0e-6), F16 3e-3 (7.7e-4); the norms without their + 1 3.8 off,
     * every dimension rotated 0.59.
     */
    @ParameterizedTest
    @CsvSource({"f32,,", "f16,,", "f32,--variant;no-norm-shift,1.0", "f32,--variant;full-rope,0.2"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String wrong, Double apart) throws Exception {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's SentencePiece tokenizer.model is not here: llama.cpp needs a vocabulary; "
                + "not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, "nemotron", List.of("--sp", sp.get().toString(), "--seed", "1"), dtype,
                DecoderReference.options(wrong), apart == null ? 0 : apart);
    }

    /** Little-endian F32 values of a tensor's bytes. */
    private record FloatBuf(byte[] bytes) {
        float at(int i) {
            return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getFloat(4 * i);
        }
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("Nemotron-Mini-tiny", config(), tensors(504), all),
                new ConverterParityTest.Folder("Minitron-4B-tiny-bf16", config(), ConverterParityTest.as("BF16", tensors(505)), withAuto));
    }
}
