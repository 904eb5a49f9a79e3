package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.json.Json;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code InternLM2Model.set_vocab}'s reading of a SentencePiece model, on a tokenizer.model written here in protobuf's
 * wire format: what SentencePiece's checks make of each piece type, the NUL piece the converter replaces, the
 * {@code [UNUSED} pieces, the normalizer's {@code add_dummy_prefix}, the added tokens of the three files, and the chat
 * EOS over SpecialVocab's. The expected values are the converter's rules applied by hand (its {@code set_vocab} code).
 */
class InternLm2VocabularyTest {
    @TempDir
    Path dir;

    /** One {@code SentencePiece} message: 1 piece, 2 score, 3 type (omitted for NORMAL, the default). */
    private static byte[] piece(String text, float score, int type) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] t = text.getBytes(StandardCharsets.UTF_8);
        out.write(0x0A);
        varint(out, t.length);
        out.writeBytes(t);
        out.write(0x15);
        out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(score).array());
        if (type != SentencePieceModel.NORMAL) {
            out.write(0x18);
            varint(out, type);
        }
        return out.toByteArray();
    }

    private static void varint(ByteArrayOutputStream out, long v) {
        while ((v & ~0x7FL) != 0) {
            out.write((int) ((v & 0x7F) | 0x80));
            v >>>= 7;
        }
        out.write((int) v);
    }

    /** A ModelProto of these pieces (field 1) and a normalizer_spec (field 3) with {@code add_dummy_prefix} (its field 3). */
    static byte[] model(boolean addDummyPrefix) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        List<byte[]> pieces = List.of(piece("<unk>", 0, SentencePieceModel.UNKNOWN), piece("<s>", 0, SentencePieceModel.CONTROL),
                piece("</s>", 0, SentencePieceModel.CONTROL), piece("<0x00>", 0, SentencePieceModel.BYTE),
                piece("\u0000", -1.5f, SentencePieceModel.NORMAL), piece("[UNUSED_TOKEN_7]", 0, SentencePieceModel.CONTROL),
                piece("\u2581the", -2.25f, SentencePieceModel.NORMAL), piece("<user>", 0, SentencePieceModel.USER_DEFINED),
                piece("<pad>", 0, SentencePieceModel.UNUSED), piece("x", -9f, SentencePieceModel.NORMAL));
        for (byte[] p : pieces) {
            out.write(0x0A);
            varint(out, p.length);
            out.writeBytes(p);
        }
        // normalizer_spec { name: "identity" (1), add_dummy_prefix (3) }
        ByteArrayOutputStream spec = new ByteArrayOutputStream();
        spec.write(0x0A);
        varint(spec, 8);
        spec.writeBytes("identity".getBytes(StandardCharsets.UTF_8));
        spec.write(0x18);
        spec.write(addDummyPrefix ? 1 : 0);
        out.write(0x1A);
        varint(out, spec.size());
        out.writeBytes(spec.toByteArray());
        return out.toByteArray();
    }

    private Map<String, MetaValue> vocabulary(String config) throws IOException {
        Map<String, MetaValue> kv = new LinkedHashMap<>();
        Vocabulary.internLm2(new ModelFiles(new BpeVocabularyTest.Folder(dir), ParseLimits.defaults()), (Map<?, ?>) Json.parse(config, 64), kv);
        return kv;
    }

    private static List<MetaValue> array(Map<String, MetaValue> kv, String key) {
        return ((MetaValue.Array) kv.get(key)).values();
    }

    @Test
    void thePiecesAsTheConverterReadsThem() throws IOException {
        Files.write(dir.resolve("tokenizer.model"), model(false));
        // added_tokens.json appended after the vocab_size pieces; tokenizer_config.json's over their ids
        Files.writeString(dir.resolve("added_tokens.json"), "{\"<|plugin|>\": 99, \"<|interpreter|>\": 98}");
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"added_tokens_decoder\": {\"9\": {\"content\": \"<|im_end|>\", "
                + "\"special\": true}, \"6\": {\"content\": \"<|action|>\", \"special\": false}}, \"bos_token\": \"<s>\", "
                + "\"eos_token\": \"</s>\", \"add_bos_token\": true}");
        Map<String, MetaValue> kv = vocabulary("{\"vocab_size\": 10, \"bos_token_id\": 1, \"eos_token_id\": 2}");
        assertThat(List.copyOf(kv.keySet())).startsWith("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens",
                "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.add_space_prefix");
        assertThat(((MetaValue.Str) kv.get("tokenizer.ggml.model")).value()).isEqualTo("llama");
        assertThat(((MetaValue.Str) kv.get("tokenizer.ggml.pre")).value()).isEqualTo("default");
        assertThat(array(kv, "tokenizer.ggml.tokens").stream().map(v -> ((MetaValue.Str) v).value()).toList()).containsExactly(
                "<unk>", "<s>", "</s>", "<0x00>", "\uD83D\uDC09", "[UNUSED_TOKEN_7]", "<|action|>", "<user>", "<pad>", "<|im_end|>",
                "<|plugin|>", "<|interpreter|>");
        // unknown 2, control 3, byte 6, normal 1 (the NUL piece too), [UNUSED 5 whatever its type, user-defined 4 from the
        // config, the model's user-defined piece normal (no IsUserDefined check), unused 5, special 3; the appended ones 4
        assertThat(array(kv, "tokenizer.ggml.token_type").stream().map(v -> ((MetaValue.Int) v).value()).toList())
                .containsExactly(2L, 3L, 3L, 6L, 1L, 5L, 4L, 1L, 5L, 3L, 4L, 4L);
        assertThat(array(kv, "tokenizer.ggml.scores").stream().map(v -> (float) ((MetaValue.Real) v).value()).toList())
                .containsExactly(0f, 0f, 0f, 0f, -1.5f, 0f, -1000f, 0f, 0f, -1000f, -1000f, -1000f);
        assertThat(((MetaValue.Bool) kv.get("tokenizer.ggml.add_space_prefix")).value()).isFalse();
        // SpecialVocab's BOS 1; its EOS 2 replaced by <|im_end|>'s id, in its place
        assertThat(((MetaValue.Int) kv.get("tokenizer.ggml.bos_token_id")).value()).isEqualTo(1);
        assertThat(((MetaValue.Int) kv.get("tokenizer.ggml.eos_token_id")).value()).isEqualTo(9);
        assertThat(List.copyOf(kv.keySet()).indexOf("tokenizer.ggml.eos_token_id"))
                .isEqualTo(List.copyOf(kv.keySet()).indexOf("tokenizer.ggml.bos_token_id") + 1);
    }

    @Test
    void theDummyPrefixDefaultsToTrueAndTheVocabularyToTheModelsPieces() throws IOException {
        Files.write(dir.resolve("tokenizer.model"), model(true));
        Map<String, MetaValue> kv = vocabulary("{\"eos_token_id\": 2}");
        assertThat(array(kv, "tokenizer.ggml.tokens")).hasSize(10);
        assertThat(((MetaValue.Bool) kv.get("tokenizer.ggml.add_space_prefix")).value()).isTrue();
        assertThat(((MetaValue.Int) kv.get("tokenizer.ggml.eos_token_id")).value()).isEqualTo(2);
    }

    @Test
    void whatTheConverterFailsOnIsMalformed() throws IOException {
        Files.write(dir.resolve("tokenizer.model"), model(true));
        // more pieces asked than the model has (IdToPiece fails), no EOS (special_token_ids["eos"] fails), an added id
        // past the vocabulary (an IndexError)
        assertThatThrownBy(() -> vocabulary("{\"vocab_size\": 11, \"eos_token_id\": 2}")).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("vocab_size 11");
        assertThatThrownBy(() -> vocabulary("{\"vocab_size\": 10}")).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("EOS");
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"added_tokens_decoder\": {\"10\": {\"content\": \"<x>\"}}}");
        assertThatThrownBy(() -> vocabulary("{\"vocab_size\": 10, \"eos_token_id\": 2}")).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("added token 10");
    }
}
