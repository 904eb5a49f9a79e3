package io.anamnesis.corpus;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An ERNIE 4.5 folder ({@code Ernie4_5ForCausalLM}) to GGUF as the converter's {@code Ernie4_5Model}
 * writes it: llama's names without the permutation, heads of {@code head_dim}, TextModel's keys,
 * the SentencePiece vocabulary with {@code add_space_prefix} from tokenizer_config.json; the bad
 * inputs. {@link ConverterParityTest} compares such folders with the converter's own files; with
 * the oracles ({@code ORACLE_CACHE}) and the corpus's SentencePiece model, llama.cpp's logits are
 * checked against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class Ernie45ToGgufTest {
    static final int VOCAB = 64, HIDDEN = 64, FF = 96, LAYERS = 2, HEADS = 4, KV_HEADS = 2, HEAD = 32;

    @TempDir
    Path tmp;

    /** A tiny ERNIE-4.5-0.3B-PT config.json (head_dim apart from hidden / heads); {@code tied} as the 0.3B. */
    static String config(boolean tied) {
        return "{\"architectures\": [\"Ernie4_5ForCausalLM\"], \"model_type\": \"ernie4_5\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", \"head_dim\": " + HEAD + ", "
                + "\"use_bias\": false, \"rms_norm_eps\": 1e-05, \"rope_theta\": 500000.0, \"max_position_embeddings\": 4096, "
                + "\"tie_word_embeddings\": " + tied + ", \"torch_dtype\": \"float32\"}";
    }

    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, boolean tied) {
        return tensors(seed, tied, VOCAB);
    }

    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, boolean tied, int vocab) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{vocab, HIDDEN});
        if (!tied) shapes.put("lm_head.weight", new long[]{vocab, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            for (String n : List.of("q", "k", "v")) {
                shapes.put(p + "self_attn." + n + "_proj.weight", new long[]{(n.equals("q") ? HEADS : KV_HEADS) * (long) HEAD, HIDDEN});
            }
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD});
            shapes.put(p + "mlp.gate_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.up_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    @Test
    void llamasNamesUnpermutedWithItsOwnHeadSize() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(601, true);
        Path out = tmp.resolve("ernie.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("ERNIE-4.5-0.3B-PT-tiny", config(true), in), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("ernie4_5");
        assertThat(g.kv.get("ernie4_5.attention.key_length").asLong()).isEqualTo(HEAD);
        assertThat(g.tensors).noneMatch(t -> t.name().equals("output.weight"));
        // not permuted: q as stored
        assertThat(g.tensor("blk.1.attn_q.weight").bytes()).isEqualTo(in.get("model.layers.1.self_attn.q_proj.weight").bytes());
        assertThat(g.tensor("blk.1.attn_q.weight").ne()).containsExactly(HIDDEN, (long) HEADS * HEAD);
    }

    /** Ernie4_5Model.set_vocab reads tokenizer.model only, then add_prefix_space from tokenizer_config.json. */
    @Test
    void theSentencePieceVocabularyWithTheConfigsSpacePrefix() throws IOException {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's hf-to-gguf SentencePiece tokenizer.model is not here: not checked");
        // the corpus model's 32000 pieces, tied as the 0.3B
        Path dir = folder("ERNIE-vocab", config(true).replace("\"vocab_size\": " + VOCAB, "\"vocab_size\": 32000"),
                tensors(602, true, 32000));
        Files.copy(sp.get(), dir.resolve("tokenizer.model"));
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"add_prefix_space\": false}");
        Path out = tmp.resolve("vocab.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", out, true);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("tokenizer.ggml.model").asString()).isEqualTo("llama");
        assertThat(g.kv.get("tokenizer.ggml.add_space_prefix").value()).containsExactly(0);
        // without tokenizer.model there is no vocabulary this family reads: exit 3 naming the file
        Files.delete(dir.resolve("tokenizer.model"));
        Path none = tmp.resolve("none.gguf");
        CorpusCliTest.Run missing = DecoderReference.convert(dir, "f16", none, true);
        assertThat(missing.code()).as(missing.err()).isEqualTo(3);
        assertThat(missing.err()).contains("tokenizer.model").contains("--no-vocab").doesNotContain("Exception");
        assertThat(none).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass (a helper's, from transformers'
     * Ernie4_5, itself checked against transformers 5.18 to 2e-6), 12 tokens, relative to the
     * largest logit, llama.cpp's F16 KV cache modelled: F32 1.5e-7 (tied 1.2e-7); rotate-half pairs
     * 0.69, gate and up swapped 0.54.
     */
    @ParameterizedTest
    @CsvSource({"f32,,,", "f16,,,", "f32,--tied,,", "f32,,--variant;neox-rope,0.3", "f32,,--mutate;swap-gate-up,0.3"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String tied, String wrong, Double apart) throws Exception {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's SentencePiece tokenizer.model is not here: llama.cpp needs a vocabulary; "
                + "not checked");
        List<String> args = new java.util.ArrayList<>(List.of("--sp", sp.get().toString(), "--seed", "2"));
        if (tied != null) args.add(tied);
        DecoderReference.llamaCppComputesTheReference(tmp, "ernie4_5", args, dtype, DecoderReference.options(wrong),
                apart == null ? 0 : apart);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("ERNIE-4.5-0.3B-PT-tiny", config(true), tensors(603, true), all),
                new ConverterParityTest.Folder("ERNIE-4.5-tiny-bf16", config(false), ConverterParityTest.as("BF16", tensors(604, false)),
                        withAuto));
    }
}
