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
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * XLM-RoBERTa encoders ({@code XLMRobertaModel}: multilingual-e5, bge-m3 and the other sentence-transformers models on
 * xlm-roberta) to GGUF as the converter's {@code XLMRobertaModel} writes them: BERT's layout under arch {@code bert},
 * the position embeddings cut past the padding id and the context length with them, and the SentencePiece unigram
 * vocabulary ({@code sentencepiece.bpe.model}) in fairseq's ids as llama.cpp's t5 tokenizer reads it; the bad inputs.
 * The SentencePiece models here are written by {@link #sentencePiece} from the protobuf schema; with the converter
 * ({@code AMN_CONVERTER_DIR}) and a Python that has sentencepiece and protobuf, whole files, vocabulary and all, are
 * compared with the converter's; with the oracles, llama.cpp's embeddings with {@code encoder_reference.py}'s.
 */
class XlmRobertaToGgufTest {
    static final int HIDDEN = 32, LAYERS = 2, HEADS = 4, INTER = 64, POSITIONS = 18;
    /** The made SentencePiece model's pieces: its three specials, then words (piece j is fairseq's token j + 1). */
    static final List<String> PIECES = List.of("<unk>", "<s>", "</s>", "\u2581the", "\u2581der", "\u2581fox", "\u2581hund", "s", "e",
            "\u2581", "t", "h", "r", "d", "n", "u", "f", "o", "x");
    static final int VOCAB = PIECES.size() + 2;

    /**
     * A precompiled character map sentencepiece loads: its trie's size in bytes (8, little-endian), that trie (two
     * empty double-array units, which match nothing), then the normalized strings ("a").
     */
    static final byte[] CHARSMAP = {8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'a', 0};

    @TempDir
    Path tmp;

    /** xlm-roberta-base's config.json shape, sizes shrunk. */
    static String config() {
        return "{\"architectures\": [\"XLMRobertaModel\"], \"attention_probs_dropout_prob\": 0.1, \"bos_token_id\": 0, "
                + "\"eos_token_id\": 2, \"hidden_act\": \"gelu\", \"hidden_dropout_prob\": 0.1, \"hidden_size\": " + HIDDEN
                + ", \"initializer_range\": 0.02, \"intermediate_size\": " + INTER + ", \"layer_norm_eps\": 1e-05, "
                + "\"max_position_embeddings\": " + POSITIONS + ", \"model_type\": \"xlm-roberta\", \"num_attention_heads\": " + HEADS
                + ", \"num_hidden_layers\": " + LAYERS + ", \"output_past\": true, \"pad_token_id\": 1, "
                + "\"position_embedding_type\": \"absolute\", \"type_vocab_size\": 1, \"use_cache\": true, \"vocab_size\": " + VOCAB + "}";
    }

    /** bge-reranker's config.json shape: XLMRobertaForSequenceClassification with one label. */
    static String rerankerConfig() {
        return config().replace("\"architectures\": [\"XLMRobertaModel\"]", "\"architectures\": [\"XLMRobertaForSequenceClassification\"], "
                + "\"id2label\": {\"0\": \"LABEL_0\"}, \"label2id\": {\"LABEL_0\": 0}");
    }

    /** A reranker's tensors: the encoder under roberta., and the classification head of one label. */
    static Map<String, ReferenceSafetensors.Tensor> rerankerTensors(long seed) {
        Map<String, ReferenceSafetensors.Tensor> t = new TreeMap<>();
        tensors(seed, "").forEach((k, v) -> t.put("roberta." + k, v));
        t.putAll(DecoderReference.randomF32(new TreeMap<>(Map.of("classifier.dense.weight", new long[]{HIDDEN, HIDDEN},
                "classifier.dense.bias", new long[]{HIDDEN}, "classifier.out_proj.weight", new long[]{1, HIDDEN},
                "classifier.out_proj.bias", new long[]{1})), new Random(seed + 1)));
        return t;
    }

    /** The tensors of a tiny random XLM-RoBERTa as F32, under {@code prefix}. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, String prefix) {
        Map<String, long[]> shapes = new TreeMap<>();
        for (var e : BertToGgufTest.tensors(0, "", false).entrySet()) {
            if (e.getKey().startsWith("pooler.")) continue;
            long[] shape = e.getValue().shape().clone();
            if (e.getKey().equals("embeddings.word_embeddings.weight")) shape[0] = VOCAB;
            if (e.getKey().equals("embeddings.position_embeddings.weight")) shape[0] = POSITIONS;
            if (e.getKey().equals("embeddings.token_type_embeddings.weight")) shape[0] = 1;
            if (e.getKey().contains("intermediate.dense.weight")) shape[0] = INTER;
            if (e.getKey().contains("intermediate.dense.bias")) shape[0] = INTER;
            if (e.getKey().matches("encoder\\.layer\\.\\d+\\.output\\.dense\\.weight")) shape[1] = INTER;
            shapes.put(prefix + e.getKey(), shape);
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    /**
     * A SentencePiece {@code ModelProto} (sentencepiece_model.proto): each piece (1) with its text (1), score (2, pieces
     * in descending scores) and type (3: the first three unknown, control, control); the trainer spec's model type (2.3);
     * the normalizer spec (3) with its name, a precompiled character map (2), add_dummy_prefix (3) and
     * remove_extra_whitespaces (4).
     */
    static byte[] sentencePiece(int modelType, byte[] charsmap, boolean addDummyPrefix, boolean removeExtraWhitespaces) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < PIECES.size(); i++) {
            ByteArrayOutputStream piece = new ByteArrayOutputStream();
            bytesField(piece, 1, PIECES.get(i).getBytes(StandardCharsets.UTF_8));
            varint(piece, (2 << 3) | 5);
            piece.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(i < 3 ? 0f : -1f - 0.25f * i).array());
            if (i < 3) {
                varint(piece, 3 << 3);
                varint(piece, i == 0 ? 2 : 3);
            }
            bytesField(out, 1, piece.toByteArray());
        }
        ByteArrayOutputStream trainer = new ByteArrayOutputStream();
        varint(trainer, 3 << 3);
        varint(trainer, modelType);
        bytesField(out, 2, trainer.toByteArray());
        ByteArrayOutputStream normalizer = new ByteArrayOutputStream();
        bytesField(normalizer, 1, "nmt_nfkc".getBytes(StandardCharsets.UTF_8));
        if (charsmap.length > 0) bytesField(normalizer, 2, charsmap);
        varint(normalizer, 3 << 3);
        varint(normalizer, addDummyPrefix ? 1 : 0);
        varint(normalizer, 4 << 3);
        varint(normalizer, removeExtraWhitespaces ? 1 : 0);
        bytesField(out, 3, normalizer.toByteArray());
        return out.toByteArray();
    }

    private static void bytesField(ByteArrayOutputStream out, int field, byte[] value) {
        varint(out, (field << 3) | 2);
        varint(out, value.length);
        out.writeBytes(value);
    }

    private static void varint(ByteArrayOutputStream out, long v) {
        while ((v & ~0x7FL) != 0) {
            out.write((int) ((v & 0x7F) | 0x80));
            v >>>= 7;
        }
        out.write((int) v);
    }

    /** tokenizer.json's added tokens and RobertaProcessing, and tokenizer_config.json, as xlm-roberta-base's. */
    static void tokenizerFiles(Path dir) throws IOException {
        StringBuilder added = new StringBuilder();
        String[][] specials = {{"<s>", "0"}, {"<pad>", "1"}, {"</s>", "2"}, {"<unk>", "3"}, {"<mask>", Integer.toString(VOCAB - 1)}};
        for (String[] s : specials) {
            added.append(added.isEmpty() ? "" : ", ").append("{\"id\": ").append(s[1]).append(", \"content\": \"").append(s[0])
                    .append("\", \"single_word\": false, \"lstrip\": ").append(s[0].equals("<mask>")).append(", \"rstrip\": false, ")
                    .append("\"normalized\": false, \"special\": true}");
        }
        Files.writeString(dir.resolve("tokenizer.json"), "{\"version\": \"1.0\", \"added_tokens\": [" + added + "], "
                + "\"post_processor\": {\"type\": \"RobertaProcessing\", \"sep\": [\"</s>\", 2], \"cls\": [\"<s>\", 0], "
                + "\"trim_offsets\": true, \"add_prefix_space\": true}, \"model\": {\"type\": \"Unigram\", \"unk_id\": 3, "
                + "\"vocab\": [[\"<s>\", 0.0]]}}");
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"bos_token\": \"<s>\", \"cls_token\": \"<s>\", \"eos_token\": "
                + "\"</s>\", \"mask_token\": \"<mask>\", \"model_max_length\": 512, \"pad_token\": \"<pad>\", \"sep_token\": \"</s>\", "
                + "\"tokenizer_class\": \"XLMRobertaTokenizer\", \"unk_token\": \"<unk>\"}");
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors, byte[] sentencePiece)
            throws IOException {
        Path dir = HfToGgufTest.folder(tmp, name, config, tensors);
        if (sentencePiece != null) Files.write(dir.resolve("sentencepiece.bpe.model"), sentencePiece);
        tokenizerFiles(dir);
        return dir;
    }

    @Test
    void fairseqsIdsTheT5VocabularyAndThePositionsPastThePaddingId() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(4001, "");
        byte[] charsmap = CHARSMAP;
        ReferenceGguf g = DecoderReference.converted(folder("xlm-r-tiny", config(), in, sentencePiece(1, charsmap, true, false)),
                "f32", true, tmp);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("bert");
        // max_position_embeddings 18 less pad_token_id + 1, and the rows before position 2 cut
        assertThat(g.kv.get("bert.context_length").asLong()).isEqualTo(POSITIONS - 2);
        byte[] stored = in.get("embeddings.position_embeddings.weight").bytes();
        assertThat(g.tensor("position_embd.weight").bytes()).isEqualTo(Arrays.copyOfRange(stored, 2 * 4 * HIDDEN, stored.length));
        assertThat(g.tensor("position_embd.weight").ne()).containsExactly(HIDDEN, POSITIONS - 2);
        // <s> <pad> </s> <unk>, then piece j at j + 1, the last entry (<mask>'s id) a filler
        List<String> tokens = Phi3ToGgufTest.strings(g.kv.get("tokenizer.ggml.tokens"));
        List<String> want = new ArrayList<>(List.of("<s>", "<pad>", "</s>", "<unk>"));
        want.addAll(PIECES.subList(3, PIECES.size()));
        want.add("[PAD" + (VOCAB - 2) + "]");
        assertThat(tokens).isEqualTo(want);
        assertThat(g.kv.get("tokenizer.ggml.model").asString()).isEqualTo("t5");
        assertThat(g.kv.get("tokenizer.ggml.pre").asString()).isEqualTo("default");
        assertThat(g.kv.get("tokenizer.ggml.add_space_prefix").value()).containsExactly(1);
        assertThat(g.kv.get("tokenizer.ggml.remove_extra_whitespaces").value()).containsExactly(0);
        assertThat(g.kv.get("tokenizer.ggml.token_type_count").asLong()).isEqualTo(1);
        // the character map as an array of uint8 (type 0) of its bytes
        byte[] map = g.kv.get("tokenizer.ggml.precompiled_charsmap").value();
        assertThat(ByteBuffer.wrap(map).order(ByteOrder.LITTLE_ENDIAN).getInt()).isZero();
        assertThat(Arrays.copyOfRange(map, 12, map.length)).isEqualTo(charsmap);
        assertThat(g.kv.get("tokenizer.ggml.mask_token_id").asLong()).isEqualTo(VOCAB - 1);
        assertThat(g.kv.get("tokenizer.ggml.padding_token_id").asLong()).isEqualTo(1);
        assertThat(g.kv.get("tokenizer.ggml.unknown_token_id").asLong()).isEqualTo(3);
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence("bert.attention.causal", "general.quantization_version",
                "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.scores",
                "tokenizer.ggml.token_type", "tokenizer.ggml.add_space_prefix", "tokenizer.ggml.token_type_count",
                "tokenizer.ggml.remove_extra_whitespaces", "tokenizer.ggml.precompiled_charsmap", "tokenizer.ggml.bos_token_id");
        // names under roberta. give the same tensors
        Map<String, ReferenceSafetensors.Tensor> prefixed = new TreeMap<>();
        in.forEach((k, v) -> prefixed.put("roberta." + k, v));
        ReferenceGguf h = DecoderReference.converted(folder("xlm-r-prefixed", config(), prefixed, null), "f32", false, tmp);
        for (ReferenceGguf.Tensor t : g.tensors) assertThat(h.tensor(t.name()).bytes()).as(t.name()).isEqualTo(t.bytes());
    }

    @Test
    void aRerankersHeadAndLabel() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = rerankerTensors(4020);
        ReferenceGguf g = DecoderReference.converted(folder("bge-reranker-tiny", rerankerConfig(), in, sentencePiece(1, CHARSMAP,
                true, true)), "q8_0", true, tmp);
        assertThat(Phi3ToGgufTest.strings(g.kv.get("bert.classifier.output_labels"))).containsExactly("LABEL_0");
        assertThat(g.tensor("cls.weight").type()).isEqualTo(8);
        assertThat(g.tensor("cls.bias").bytes()).isEqualTo(in.get("classifier.dense.bias").bytes());
        // the one-row output projection quantized as gguf-py quantizes a 2-D tensor (ggml would count it 1-D)
        assertThat(g.tensor("cls.output.weight").type()).isEqualTo(8);
        assertThat(g.tensor("cls.output.weight").ne()).containsExactly(HIDDEN, 1);
        assertThat(g.tensor("cls.output.bias").type()).isZero();
    }

    /**
     * No sentencepiece.bpe.model beside a tokenizer.json (which the converter reads through transformers) is exit 6,
     * neither is exit 3, a model that is no protobuf exit 3 naming the file; a BPE SentencePiece model (type 2),
     * jina-embeddings-v3's LoRA adapters, another activation exit 6; a padding id past the positions exit 3; nothing is
     * written.
     */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "tokenizer.json||6|sentencepiece.bpe.model",
            "none||3|sentencepiece.bpe.model",
            "bpe||6|not unigram",
            "garbage||3|sentencepiece.bpe.model is not a SentencePiece model",
            "config|\"lora_adaptations\": [\"retrieval.query\"], |6|lora_adaptations",
            "config|\"hidden_act\": \"relu\", |6|hidden_act",
            "config|\"pad_token_id\": 40, |3|pad_token_id"})
    void whatTheConverterWouldNotWrite(String what, String extra, int exit, String named) throws IOException {
        String config = what.equals("config") ? config().replace("{", "{" + extra).replace("\"hidden_act\": \"gelu\", ",
                extra.contains("hidden_act") ? "" : "\"hidden_act\": \"gelu\", ").replace("\"pad_token_id\": 1, ",
                extra.contains("pad_token_id") ? "" : "\"pad_token_id\": 1, ") : config();
        byte[] sp = what.equals("garbage") ? new byte[]{0x0F, 0x01, 0x02} : what.equals("bpe") ? sentencePiece(2, new byte[0], true, true)
                : what.equals("config") ? sentencePiece(1, new byte[0], true, true) : null;
        Path dir = folder("xlm-r-bad", config, tensors(4002, ""), sp);
        if (what.equals("none")) Files.delete(dir.resolve("tokenizer.json"));
        Path out = tmp.resolve("bad.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", out, true);
        assertThat(r.code()).as(r.err()).isEqualTo(exit);
        assertThat(r.err()).contains(named).doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * The whole file, vocabulary and all, against the converter's own (its {@code _xlmroberta_set_vocab} through the
     * sentencepiece and protobuf packages: {@code converter_reference.py} with CONVERTER_REFERENCE_VOCAB=1), at each
     * output type, for a model with a character map, one without, and a reranker (its head, its label, its one-row
     * {@code cls.output} quantized to Q8_0 as gguf-py quantizes it).
     */
    @Test
    void byteForByteTheConvertersFileWithItsVocabulary() throws Exception {
        Optional<String> missing = ConverterParityTest.converterMissing();
        Assumptions.assumeTrue(missing.isEmpty(), () -> "converter parity skipped: " + missing.orElse(""));
        Optional<String> python = ConverterParityTest.python();
        Assumptions.assumeTrue(python.isPresent(), "no Python with numpy, yaml and torch: converter parity skipped");
        Process probe = new ProcessBuilder(python.get(), "-c", "import sentencepiece, google.protobuf").redirectErrorStream(true).start();
        probe.getInputStream().readAllBytes();
        Assumptions.assumeTrue(probe.waitFor(60, TimeUnit.SECONDS) && probe.exitValue() == 0,
                python.get() + " has no sentencepiece and protobuf (the converter's XLM-RoBERTa vocabulary needs them): skipped");
        Map<String, byte[]> models = new LinkedHashMap<>();
        models.put("xlm-r-charsmap", sentencePiece(1, CHARSMAP, true, true));
        models.put("xlm-r-plain", sentencePiece(1, new byte[0], false, false));
        List<String> cmd = new ArrayList<>(List.of(python.get(), ConverterParityTest.SCRIPT.toString(), "convert",
                Path.of(System.getenv(ConverterParityTest.DIR_ENV)).toAbsolutePath().toString()));
        List<String[]> jobs = new ArrayList<>();
        models.put("xlm-r-reranker", sentencePiece(1, CHARSMAP, true, true));
        int seed = 4003;
        for (var m : models.entrySet()) {
            boolean reranker = m.getKey().endsWith("reranker");
            Map<String, ReferenceSafetensors.Tensor> t = reranker ? rerankerTensors(seed++) : tensors(seed++, "");
            Path dir = folder(m.getKey(), reranker ? rerankerConfig() : config(),
                    m.getKey().endsWith("plain") ? ConverterParityTest.as("BF16", t) : t, m.getValue());
            for (String outtype : List.of("f32", "f16", "bf16", "q8_0", "auto")) {
                Path ref = tmp.resolve(m.getKey() + "-" + outtype + "-converter.gguf");
                cmd.addAll(List.of(dir.toString(), ref.toString(), outtype));
                jobs.add(new String[]{dir.toString(), ref.toString(), outtype});
            }
        }
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("CONVERTER_REFERENCE_VOCAB", "1");
        Process p = pb.start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(600, TimeUnit.SECONDS) && p.exitValue() == 0).as("converter_reference.py: " + log).isTrue();
        for (String[] j : jobs) {
            Path ours = tmp.resolve(Path.of(j[1]).getFileName().toString().replace("-converter", "-amn"));
            CorpusCliTest.Run r = DecoderReference.convert(Path.of(j[0]), j[2], ours, true);
            assertThat(r.code()).as(r.err()).isZero();
            assertThat(Files.readAllBytes(ours)).as(j[1]).isEqualTo(Files.readAllBytes(Path.of(j[1])));
        }
    }

    /**
     * llama.cpp's outputs of 12 tokens (each token's, and the mean-pooled embedding) against the reference forward
     * pass, positions from 2 as RoBERTa counts them: F32 within 1e-3 of the largest value (measured 6.1e-5: ggml's F16
     * GELU table), F16 3e-3; without position embeddings 0.43 off, with positions counted from 0 (no cut) told apart too.
     */
    @ParameterizedTest
    @CsvSource({"f32, no-positions", "f16, positions-from-0"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String wrong) throws Exception {
        Path oracles = DecoderReference.oracles();
        Path sp = tmp.resolve("sentencepiece.bpe.model");
        Files.write(sp, sentencePiece(1, new byte[0], true, true));
        Path dir = tmp.resolve("xlm-r-forward");
        EncoderReference.make(tmp, "xlm-roberta", dir, List.of("--sp", sp.toString(), "--seed", "1", "--pooling", "mean"));
        EncoderReference.llamaCppComputesTheReference(tmp, oracles, dir, dtype, dtype.equals("f32") ? 1e-3 : 3e-3, true, wrong, 0.05,
                "--tokens", "0,7,12,19,3,4,17,6,5,9,20,2");
    }

    /**
     * A reranker's score, llama.cpp's rank pooling (the head on the first token), against the reference's
     * {@code out_proj(tanh(dense(x[0])))}: within 1e-3 of the score (measured 6.7e-5 relative).
     */
    @Test
    void llamaCppScoresAsTheRerankersHead() throws Exception {
        Path oracles = DecoderReference.oracles();
        Path sp = tmp.resolve("sentencepiece.bpe.model");
        Files.write(sp, sentencePiece(1, new byte[0], true, true));
        Path dir = tmp.resolve("reranker-forward");
        EncoderReference.make(tmp, "xlm-roberta", dir, List.of("--sp", sp.toString(), "--seed", "3", "--reranker"));
        Path out = tmp.resolve("reranker-f32.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f32", out, true);
        assertThat(r.code()).as(r.err()).isZero();
        JsonNode cmp = EncoderReference.compare(tmp, dir, out, oracles, "f32", "--tokens", "0,7,12,19,3,4,17,6,5,9,20,2");
        assertThat(cmp.path("rank_abs_diff").asDouble()).as(cmp.toString())
                .isLessThan(1e-3 * Math.abs(cmp.path("rank_score_reference").asDouble()));
        assertThat(cmp.path("tokens_max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(1e-3);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files (vocabulary aside). */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        Map<String, ReferenceSafetensors.Tensor> prefixed = new TreeMap<>();
        ConverterParityTest.as("BF16", tensors(4010, "")).forEach((k, v) -> prefixed.put("roberta." + k, v));
        return List.of(new ConverterParityTest.Folder("multilingual-e5-tiny", config(), tensors(4009, ""),
                        BertToGgufTest.sentenceTransformers("pooling_mode_mean_tokens"), all),
                new ConverterParityTest.Folder("bge-m3-tiny-bf16", config(), prefixed,
                        BertToGgufTest.sentenceTransformers("pooling_mode_cls_token"), withAuto));
    }
}
