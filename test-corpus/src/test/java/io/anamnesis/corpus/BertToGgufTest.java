package io.anamnesis.corpus;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * BERT encoders ({@code BertModel}, {@code BertForMaskedLM}, and the sentence-transformers embedding models built on
 * them) to GGUF as the converter's {@code BertModel} writes them: names with or without {@code bert.}, the old
 * {@code gamma}/{@code beta} names, the pooler and pre-training heads left out, position and token type embeddings
 * kept F32, TextModel's keys then {@code attention.causal} false and the sentence-transformers pooling type, a
 * WordPiece vocabulary in llama.cpp's phantom-space spelling; the bad inputs. {@link ConverterParityTest} compares such
 * folders with the converter's own files; with the oracles ({@code ORACLE_CACHE}) and bert-base-uncased's tokenizer
 * ({@code AMN_TOKENIZER_BERT}, made by {@code bench/scripts/bert_uncased_tokenizer.py}) llama.cpp's embeddings are
 * checked against {@code bench/scripts/encoder_reference.py}'s forward pass ({@link EncoderReference}).
 */
class BertToGgufTest {
    static final int VOCAB = 40, HIDDEN = 32, LAYERS = 2, HEADS = 4, INTER = 64, POSITIONS = 16;

    @TempDir
    Path tmp;

    /** bert-base-uncased's config.json shape, sizes shrunk, {@code architecture} its class. */
    static String config(String architecture) {
        return "{\"architectures\": [\"" + architecture + "\"], \"attention_probs_dropout_prob\": 0.1, "
                + "\"classifier_dropout\": null, \"hidden_act\": \"gelu\", \"hidden_dropout_prob\": 0.1, \"hidden_size\": " + HIDDEN
                + ", \"initializer_range\": 0.02, \"intermediate_size\": " + INTER + ", \"layer_norm_eps\": 1e-12, "
                + "\"max_position_embeddings\": " + POSITIONS + ", \"model_type\": \"bert\", \"num_attention_heads\": " + HEADS
                + ", \"num_hidden_layers\": " + LAYERS + ", \"pad_token_id\": 0, \"position_embedding_type\": \"absolute\", "
                + "\"type_vocab_size\": 2, \"use_cache\": true, \"vocab_size\": " + VOCAB + "}";
    }

    /**
     * The tensors of a tiny random BERT as F32, named under {@code prefix} ({@code bert.} as BertForMaskedLM saves them),
     * its LayerNorms' parameters {@code gamma}/{@code beta} when {@code gammaBeta}; with the pooler, or with the masked
     * language model's head under {@code cls.predictions.} when the prefix is given.
     */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, String prefix, boolean gammaBeta) {
        Map<String, long[]> shapes = new TreeMap<>();
        String w = gammaBeta ? "gamma" : "weight", b = gammaBeta ? "beta" : "bias";
        shapes.put(prefix + "embeddings.word_embeddings.weight", new long[]{VOCAB, HIDDEN});
        shapes.put(prefix + "embeddings.position_embeddings.weight", new long[]{POSITIONS, HIDDEN});
        shapes.put(prefix + "embeddings.token_type_embeddings.weight", new long[]{2, HIDDEN});
        shapes.put(prefix + "embeddings.LayerNorm." + w, new long[]{HIDDEN});
        shapes.put(prefix + "embeddings.LayerNorm." + b, new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = prefix + "encoder.layer." + i + ".";
            for (String n : List.of("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense")) {
                shapes.put(p + n + ".weight", new long[]{HIDDEN, HIDDEN});
                shapes.put(p + n + ".bias", new long[]{HIDDEN});
            }
            shapes.put(p + "intermediate.dense.weight", new long[]{INTER, HIDDEN});
            shapes.put(p + "intermediate.dense.bias", new long[]{INTER});
            shapes.put(p + "output.dense.weight", new long[]{HIDDEN, INTER});
            shapes.put(p + "output.dense.bias", new long[]{HIDDEN});
            for (String n : List.of("attention.output.LayerNorm.", "output.LayerNorm.")) {
                shapes.put(p + n + w, new long[]{HIDDEN});
                shapes.put(p + n + b, new long[]{HIDDEN});
            }
        }
        if (prefix.isEmpty()) {
            shapes.put("pooler.dense.weight", new long[]{HIDDEN, HIDDEN});
            shapes.put("pooler.dense.bias", new long[]{HIDDEN});
        } else {
            shapes.put("cls.predictions.bias", new long[]{VOCAB});
            shapes.put("cls.predictions.transform.dense.weight", new long[]{HIDDEN, HIDDEN});
            shapes.put("cls.predictions.transform.LayerNorm." + w, new long[]{HIDDEN});
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    /** modules.json and 1_Pooling/config.json as sentence-transformers saves them, pooling by {@code mode} (a pooling_mode_* key). */
    static Map<String, String> sentenceTransformers(String mode) {
        Map<String, String> files = new LinkedHashMap<>();
        files.put("modules.json", "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"}, "
                + "{\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}, "
                + "{\"idx\": 2, \"name\": \"2\", \"path\": \"2_Normalize\", \"type\": \"sentence_transformers.models.Normalize\"}]");
        StringBuilder pooling = new StringBuilder("{\"word_embedding_dimension\": " + HIDDEN);
        for (String m : List.of("pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens",
                "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")) {
            pooling.append(", \"").append(m).append("\": ").append(m.equals(mode));
        }
        files.put("1_Pooling/config.json", pooling.append(", \"include_prompt\": true}").toString());
        return files;
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    @Test
    void textModelKeysThenAnEncodersAndTheEmbeddingsKeptF32() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(2001, "", false);
        Path out = tmp.resolve("bert.gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", folder("bert-tiny", config("BertModel"), in).toString(), "--to", "gguf",
                "--dtype", "f16", "-o", out.toString(), "--no-vocab");
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "bert";
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo(a);
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence(a + ".block_count", a + ".context_length", a + ".embedding_length",
                a + ".feed_forward_length", a + ".attention.head_count", a + ".attention.layer_norm_epsilon", "general.file_type",
                a + ".attention.causal", "general.quantization_version")
                .doesNotContain(a + ".pooling_type", a + ".attention.head_count_kv", a + ".rope.freq_base");
        assertThat(g.kv.get(a + ".context_length").asLong()).isEqualTo(POSITIONS);
        assertThat(g.kv.get(a + ".feed_forward_length").asLong()).isEqualTo(INTER);
        assertThat(g.kv.get(a + ".attention.causal").value()).containsExactly(0);
        // the word embeddings in --dtype, the position and token type embeddings F32 as stored; no output head, no pooler
        assertThat(g.tensor("token_embd.weight").type()).isEqualTo(1);
        assertThat(g.tensor("position_embd.weight").type()).isZero();
        assertThat(g.tensor("position_embd.weight").bytes()).isEqualTo(in.get("embeddings.position_embeddings.weight").bytes());
        assertThat(g.tensor("token_types.weight").bytes()).isEqualTo(in.get("embeddings.token_type_embeddings.weight").bytes());
        assertThat(g.tensor("blk.1.layer_output_norm.bias").bytes()).isEqualTo(in.get("encoder.layer.1.output.LayerNorm.bias").bytes());
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name)).contains("token_embd_norm.weight", "blk.0.attn_output_norm.weight",
                "blk.0.attn_q.bias", "blk.0.ffn_up.weight", "blk.0.ffn_down.bias").doesNotContain("output.weight", "output_norm.weight")
                .hasSize(5 + 16 * LAYERS);
        assertThat(r.out() + r.err()).contains("left out 2 tensors of the pooler and pre-training heads (pooler.* 2)");
    }

    /** BertForMaskedLM's names (under bert., gamma/beta, its masked-LM head) give the same GGUF tensors as BertModel's. */
    @Test
    void theMaskedLanguageModelsNamesAndTheOldLayerNormNames() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> plain = tensors(2002, "", false);
        Map<String, ReferenceSafetensors.Tensor> mlm = new TreeMap<>(tensors(2003, "bert.", true));
        // the same values under the masked-LM names
        for (var e : plain.entrySet()) {
            if (e.getKey().startsWith("pooler.")) continue;
            mlm.put("bert." + e.getKey().replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"),
                    e.getValue());
        }
        ReferenceGguf a = DecoderReference.converted(folder("bert-plain", config("BertModel"), plain), "f32", false, tmp);
        Path out = tmp.resolve("bert-mlm.gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", folder("bert-mlm", config("BertForMaskedLM"), mlm).toString(), "--to",
                "gguf", "--dtype", "f32", "-o", out.toString(), "--no-vocab");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out() + r.err()).contains("cls.predictions.* 3");
        ReferenceGguf b = ReferenceGguf.read(out);
        assertThat(b.tensors.stream().map(ReferenceGguf.Tensor::name).toList())
                .isEqualTo(a.tensors.stream().map(ReferenceGguf.Tensor::name).toList());
        for (ReferenceGguf.Tensor t : a.tensors) assertThat(b.tensor(t.name()).bytes()).as(t.name()).isEqualTo(t.bytes());
    }

    /** sentence-transformers' Pooling module gives the pooling type: mean 1, CLS 2. */
    @ParameterizedTest
    @CsvSource({"pooling_mode_mean_tokens, 1", "pooling_mode_cls_token, 2"})
    void theSentenceTransformersPooling(String mode, long type) throws IOException {
        Path dir = folder("bge-tiny-" + type, config("BertModel"), tensors(2004, "", false));
        for (var f : sentenceTransformers(mode).entrySet()) {
            Files.createDirectories(dir.resolve(f.getKey()).getParent());
            Files.writeString(dir.resolve(f.getKey()), f.getValue());
        }
        ReferenceGguf g = DecoderReference.converted(dir, "f16", false, tmp);
        assertThat(g.kv.get("bert.pooling_type").asLong()).isEqualTo(type);
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence("bert.attention.causal", "bert.pooling_type", "general.quantization_version");
    }

    /**
     * A WordPiece vocabulary whose check hash the converter's table does not have (a made one) stops the converter
     * (exit 6, naming the hash); a BPE tokenizer.json is not BERT's (exit 6); a vocab.txt alone is not read (exit 3,
     * naming tokenizer.json); nothing is written.
     */
    @Test
    void vocabulariesTheConverterWouldNotWrite() throws IOException {
        Path dir = folder("bert-vocab", config("BertModel"), tensors(2005, "", false));
        StringBuilder vocab = new StringBuilder();
        List<String> tokens = new ArrayList<>(List.of("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "##s", "a", "!"));
        for (int i = 0; i < tokens.size(); i++) vocab.append(i == 0 ? "" : ", ").append('"').append(tokens.get(i)).append("\": ").append(i);
        String wordPiece = "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 0, \"content\": \"[PAD]\", \"special\": true, "
                + "\"normalized\": false}], \"normalizer\": {\"type\": \"BertNormalizer\", \"clean_text\": true, "
                + "\"handle_chinese_chars\": true, \"strip_accents\": null, \"lowercase\": true}, \"pre_tokenizer\": "
                + "{\"type\": \"BertPreTokenizer\"}, \"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", 3], "
                + "\"cls\": [\"[CLS]\", 2]}, \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
                + "\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 100, \"vocab\": {" + vocab + "}}}";
        Path out = tmp.resolve("bert-vocab.gguf");
        Files.writeString(dir.resolve("tokenizer.json"), wordPiece);
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", out, true);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("WordPiece pre-tokenizer llama.cpp's converter does not know").contains("check hash is ")
                .contains("--no-vocab").doesNotContain("Exception");
        assertThat(out).doesNotExist();

        Files.writeString(dir.resolve("tokenizer.json"), "{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}");
        r = DecoderReference.convert(dir, "f16", out, true);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("is a BPE vocabulary").contains("WordPiece").doesNotContain("Exception");

        Files.delete(dir.resolve("tokenizer.json"));
        Files.writeString(dir.resolve("vocab.txt"), String.join("\n", tokens) + "\n");
        r = DecoderReference.convert(dir, "f16", out, true);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("tokenizer.json is not in").contains("vocab.txt").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * bert-base-uncased's vocabulary as the converter writes it: model bert, pre-tokenizer jina-v2-en (its check hash's
     * name), the phantom-space spelling, the five special tokens control, the ids and add flags of gguf-py's
     * SpecialVocab (bos [CLS] and eos [SEP] from the post-processor's template).
     */
    @Test
    void bertUncasedVocabulary() throws IOException {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_BERT");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_BERT not set: the real WordPiece vocabulary is not checked");
        String config = config("BertModel").replace("\"vocab_size\": " + VOCAB, "\"vocab_size\": 30522");
        Map<String, ReferenceSafetensors.Tensor> in = new TreeMap<>(tensors(2006, "", false));
        in.put("embeddings.word_embeddings.weight", DecoderReference.randomF32(Map.of("e", new long[]{30522, HIDDEN}), new Random(7)).get("e"));
        Path dir = folder("bert-uncased-tiny", config, in);
        for (String f : List.of("tokenizer.json", "tokenizer_config.json")) Files.copy(tok.get().resolve(f), dir.resolve(f));
        ReferenceGguf g = DecoderReference.converted(dir, "f16", true, tmp);
        assertThat(g.kv.get("tokenizer.ggml.model").asString()).isEqualTo("bert");
        assertThat(g.kv.get("tokenizer.ggml.pre").asString()).isEqualTo("jina-v2-en");
        assertThat(g.kv.get("tokenizer.ggml.token_type_count").asLong()).isEqualTo(2);
        List<String> tokens = Phi3ToGgufTest.strings(g.kv.get("tokenizer.ggml.tokens"));
        assertThat(tokens).hasSize(30522);
        // [PAD] control as it is, [unused0] a word, "the" a word, "##s" a continuation
        assertThat(tokens.get(0)).isEqualTo("[PAD]");
        assertThat(tokens.get(1)).isEqualTo("\u2581[unused0]");
        assertThat(tokens.get(101)).isEqualTo("[CLS]");
        assertThat(tokens.get(1996)).isEqualTo("\u2581the");
        assertThat(tokens.get(2015)).isEqualTo("s");
        assertThat(g.kv.get("bert.attention.causal").value()).containsExactly(0);
        Map<String, Long> ids = new LinkedHashMap<>();
        for (String k : List.of("bos", "eos", "unknown", "seperator", "padding", "mask")) {
            ids.put(k, g.kv.get("tokenizer.ggml." + k + "_token_id").asLong());
        }
        assertThat(ids).containsExactly(Map.entry("bos", 101L), Map.entry("eos", 102L), Map.entry("unknown", 100L),
                Map.entry("seperator", 102L), Map.entry("padding", 0L), Map.entry("mask", 103L));
        assertThat(g.kv.get("tokenizer.ggml.add_bos_token").value()).containsExactly(1);
        assertThat(g.kv.get("tokenizer.ggml.add_eos_token").value()).containsExactly(1);
        assertThat(g.kv.get("tokenizer.ggml.add_sep_token").value()).containsExactly(0);
    }

    /** What llama.cpp's bert would compute as another model (exit 6); what config.json lacks or gives wrong (exit 3). */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"hidden_act\": \"gelu\"|\"hidden_act\": \"relu\"|6|hidden_act",
            "\"position_embedding_type\": \"absolute\"|\"position_embedding_type\": \"relative_key\"|6|position_embedding_type",
            "\"use_cache\": true|\"is_decoder\": true|6|is_decoder",
            "\"layer_norm_eps\": 1e-12, ||3|layer_norm_eps",
            "\"hidden_size\": 32|\"hidden_size\": 48|3|hidden_size",
            "\"intermediate_size\": 64|\"intermediate_size\": 96|3|intermediate_size",
            "\"max_position_embeddings\": 16|\"max_position_embeddings\": 32|3|max_position_embeddings",
            "\"num_attention_heads\": 4|\"num_attention_heads\": 5|3|num_attention_heads"})
    void whatDoesNotFitIsRefused(String from, String to, int exit, String key) throws IOException {
        DecoderReference.refused(tmp, config("BertModel"), from, to, tensors(2007, "", false), exit, key);
    }

    /**
     * llama.cpp's outputs of 12 tokens (each token's, and the folder's pooled embedding) against the reference forward
     * pass computed with llama.cpp's GELU (tanh, looked up in ggml's F16 table): F32 within 1e-3 of the largest value
     * (measured 6.1e-5 to 1.3e-4, single F16 steps of the table where float32 and float64 round an input apart), F16
     * 3e-3 (5.7-7.9e-4); without position embeddings, without the token type row or with keys and values swapped the
     * model lands 0.37-1.0 off.
     */
    @ParameterizedTest
    @CsvSource({"f32, --pooling;mean, no-positions", "f16, --pooling;cls, no-token-types", "f32, --masked-lm;--gamma-beta, kv-swapped"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String make, String wrong) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_BERT");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_BERT not set: llama.cpp needs the vocabulary; not checked");
        Path oracles = DecoderReference.oracles();
        Path dir = tmp.resolve("bert-forward");
        List<String> args = new ArrayList<>(List.of("--tokenizer", tok.get().toString(), "--seed", "3"));
        args.addAll(List.of(make.split(";")));
        EncoderReference.make(tmp, "bert", dir, args);
        EncoderReference.llamaCppComputesTheReference(tmp, oracles, dir, dtype, dtype.equals("f32") ? 1e-3 : 3e-3,
                !make.contains("masked-lm"), wrong, 0.1);
    }

    /**
     * A llama-quantize type in the same pass: byte for byte llama.cpp's {@code llama_model_quantize} (the oracles'
     * {@code llama_ref.py quantize}) of the converter's default output, which {@code --dtype auto} is; BERT's rows of
     * 64 fall back from the K-quants as llama.cpp falls back.
     */
    @ParameterizedTest
    @CsvSource({"Q4_K_M, --pooling;mean", "Q5_K_S, --masked-lm"})
    void aQuantizedConversionIsLlamaQuantizeOfTheConvertersFile(String type, String make) throws Exception {
        Path oracles = DecoderReference.oracles();
        Path dir = tmp.resolve("bert-quantize");
        List<String> args = new ArrayList<>(List.of("--seed", "9"));
        args.addAll(List.of(make.split(";")));
        EncoderReference.make(tmp, "bert", dir, args);
        EncoderReference.quantizedIsLlamaQuantize(tmp, oracles, dir, type);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("bge-tiny", config("BertModel"), tensors(2008, "", false),
                        sentenceTransformers("pooling_mode_cls_token"), all),
                new ConverterParityTest.Folder("bert-mlm-tiny-bf16", config("BertForMaskedLM"),
                        ConverterParityTest.as("BF16", tensors(2009, "bert.", true)), withAuto));
    }
}
