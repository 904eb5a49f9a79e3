package io.anamnesis.corpus;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.ForgetOptions;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.spi.WriteOptions;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * A model folder's {@code tokenizer.json} is as untrusted as its weights: the HF-to-GGUF
 * export parses it, runs its normalizers, pre-tokenizer regexes, BPE merges and
 * post-processor on the converter's check text, and writes its vocabulary. Whatever the
 * bytes, the export ends in a GGUF or a typed error: no other exception, no hang (the
 * regex runs on a read budget).
 */
class TokenizerJsonFuzzTarget {
    private static final Anamnesis AMN = Anamnesis.installed();
    private static final Path DIR = folder();

    /** A one-layer llama folder (hidden 8, vocabulary 64, F32), whose tokenizer.json each input replaces. */
    private static Path folder() {
        try {
            Path dir = Files.createTempDirectory("amn-fuzz-tokenizer-");
            // deleteOnExit runs in reverse order of registration: the files first, then the folder they emptied.
            dir.toFile().deleteOnExit();
            for (String file : List.of("config.json", "model.safetensors", "tokenizer.json", "out.gguf")) {
                dir.resolve(file).toFile().deleteOnExit();
            }
            Files.writeString(dir.resolve("config.json"), """
                    {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8, "intermediate_size": 16,
                     "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
                     "max_position_embeddings": 64, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "vocab_size": 64,
                     "tie_word_embeddings": false, "bos_token_id": 1, "eos_token_id": 2}""");
            Map<String, ReferenceSafetensors.Tensor> t = new LinkedHashMap<>();
            put(t, "model.embed_tokens.weight", 64, 8);
            put(t, "model.layers.0.input_layernorm.weight", 8);
            put(t, "model.layers.0.self_attn.q_proj.weight", 8, 8);
            put(t, "model.layers.0.self_attn.k_proj.weight", 4, 8);
            put(t, "model.layers.0.self_attn.v_proj.weight", 4, 8);
            put(t, "model.layers.0.self_attn.o_proj.weight", 8, 8);
            put(t, "model.layers.0.post_attention_layernorm.weight", 8);
            put(t, "model.layers.0.mlp.gate_proj.weight", 16, 8);
            put(t, "model.layers.0.mlp.up_proj.weight", 16, 8);
            put(t, "model.layers.0.mlp.down_proj.weight", 8, 16);
            put(t, "model.norm.weight", 8);
            put(t, "lm_head.weight", 64, 8);
            HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), t);
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void put(Map<String, ReferenceSafetensors.Tensor> t, String name, long... shape) {
        long n = 1;
        for (long d : shape) n *= d;
        t.put(name, new ReferenceSafetensors.Tensor("F32", shape, new byte[(int) (4 * n)]));
    }

    static Stream<byte[]> seeds() {
        String vocab = "\"vocab\": {\"a\": 0, \"<s>\": 1, \"</s>\": 2, \"b\": 3, \"Ġ\": 4, \"ab\": 5, \"Ġa\": 6, \"1\": 7}";
        String bpe = "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 1, \"content\": \"<s>\", \"single_word\": false, "
                + "\"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true}], \"normalizer\": %s, "
                + "\"pre_tokenizer\": %s, \"post_processor\": %s, \"decoder\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"BPE\", "
                + "\"dropout\": null, \"unk_token\": null, \"byte_fallback\": false, \"ignore_merges\": true, " + vocab
                + ", \"merges\": [\"a b\", \"Ġ a\"]}}";
        String byteLevel = "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}";
        String split = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": "
                + "\"(?i:'s|'t)|\\\\p{L}+|\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+|\\\\s+\"}, \"behavior\": \"Isolated\", \"invert\": false}, "
                + "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}";
        String template = "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}, "
                + "{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [], \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", "
                + "\"ids\": [1], \"tokens\": [\"<s>\"]}}}";
        return Stream.of(bpe.formatted("null", byteLevel, "null"), bpe.formatted("{\"type\": \"NFC\"}", split, template),
                        bpe.formatted("null", "{\"type\": \"Digits\", \"individual_digits\": true}", "null"), "{}", "[]")
                .map(s -> s.getBytes(StandardCharsets.UTF_8));
    }

    @MethodSource("seeds")
    @FuzzTest(maxDuration = "4s")
    void export(byte[] tokenizerJson) {
        Path out = DIR.resolve("out.gguf");
        try {
            Files.write(DIR.resolve("tokenizer.json"), tokenizerJson);
            try {
                AMN.export(DIR, "gguf", "f32", true, ForgetOptions.defaults(), LossMeter.off(), out, WriteOptions.threads(1));
            } catch (AnamnesisException expected) {
                // typed
            }
            Files.deleteIfExists(out);
        } catch (IOException e) {
            throw new UncheckedIOException("the fuzz harness's own files", e);
        }
    }
}
