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
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An IBM Granite folder ({@code GraniteForCausalLM}) to GGUF as the converter's
 * {@code GraniteModel} writes it: architecture {@code granite}, llama's keys without what
 * config.json's {@code head_dim} would have given (the converter pops it first: no key/value
 * length, the rope dimension from hidden size over heads), then the four multipliers as
 * float32 keys, a zero one left out; llama's tensors with the same rows permuted; and the bad
 * inputs. {@link ConverterParityTest} compares such folders with the converter's own files;
 * with the oracles ({@code ORACLE_CACHE}) and the corpus's SentencePiece tokenizer.model,
 * llama.cpp's logits of a converted folder are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass with the multipliers (skipped,
 * saying so, without them).
 */
class GraniteToGgufTest {
    @TempDir
    Path tmp;

    static final String MULTIPLIERS = "\"attention_multiplier\": 0.0078125, \"embedding_multiplier\": 12.0, "
            + "\"residual_multiplier\": 0.22, \"logits_scaling\": 8.0, ";

    /**
     * A tiny Granite config.json: Llama3RopeToGgufTest's sizes (heads of 16), a head_dim of 32
     * that the converter ignores, {@code multipliers} and the rope scaling {@code rope}.
     */
    static String config(String multipliers, String rope) {
        return Llama3RopeToGgufTest.config(rope, "\"head_dim\": 32, " + multipliers)
                .replace("\"LlamaForCausalLM\"", "\"GraniteForCausalLM\"").replace("\"model_type\": \"llama\"", "\"model_type\": \"granite\"");
    }

    private Path folder(String name, String config) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        Files.writeString(dir.resolve("config.json"), config);
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), Llama3RopeToGgufTest.tensors(21));
        return dir;
    }

    private static float f32(ReferenceGguf g, String key) {
        ReferenceGguf.Kv kv = g.kv.get(key);
        assertThat(kv).as(key).isNotNull();
        assertThat(kv.type()).as(key + " is a float32").isEqualTo(6);
        return ByteBuffer.wrap(kv.value()).order(ByteOrder.LITTLE_ENDIAN).getFloat();
    }

    @Test
    void theMultipliersAreKeysAndHeadDimIsIgnored() throws IOException {
        ReferenceGguf g = DecoderReference.converted(folder("granite-tiny", config(MULTIPLIERS, "null")), "f16", false, tmp);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("granite");
        assertThat(f32(g, "granite.attention.scale")).isEqualTo(0.0078125f);
        assertThat(f32(g, "granite.embedding_scale")).isEqualTo(12.0f);
        assertThat(f32(g, "granite.residual_scale")).isEqualTo(0.22f);
        assertThat(f32(g, "granite.logit_scale")).isEqualTo(8.0f);
        // hidden 64 over 4 heads, not config.json's head_dim of 32
        assertThat(g.kv.get("granite.rope.dimension_count").asLong()).isEqualTo(16);
        assertThat(g.kv).doesNotContainKeys("granite.attention.key_length", "granite.attention.value_length");
        assertThat(g.kv.get("granite.vocab_size").asLong()).isEqualTo(Llama3RopeToGgufTest.VOCAB);
        // the family's keys come last, in GraniteModel.set_gguf_parameters' order
        java.util.List<String> keys = new java.util.ArrayList<>(g.kv.keySet());
        int at = keys.indexOf("granite.rope.dimension_count");
        assertThat(keys.subList(at, at + 5)).containsExactly("granite.rope.dimension_count", "granite.attention.scale",
                "granite.embedding_scale", "granite.residual_scale", "granite.logit_scale");
    }

    /** The same weights as a llama folder: the same tensors, names, types and bytes (q and k rows permuted alike). */
    @Test
    void theTensorsAreLlamas() throws IOException {
        ReferenceGguf granite = DecoderReference.converted(folder("granite/tiny", config(MULTIPLIERS, "null")), "f16", false,
                tmp.resolve("granite"));
        ReferenceGguf llama = DecoderReference.converted(folder("llama/tiny", Llama3RopeToGgufTest.config("null", "")), "f16", false,
                tmp.resolve("llama"));
        assertThat(granite.tensors).hasSameSizeAs(llama.tensors);
        for (int i = 0; i < llama.tensors.size(); i++) {
            ReferenceGguf.Tensor a = granite.tensors.get(i), b = llama.tensors.get(i);
            assertThat(a.name()).isEqualTo(b.name());
            assertThat(a.ne()).isEqualTo(b.ne());
            assertThat(a.type()).isEqualTo(b.type());
            assertThat(a.bytes()).as(a.name()).isEqualTo(b.bytes());
        }
        assertThat(granite.tensors).anyMatch(t -> t.name().equals("blk.1.attn_q.weight"));
    }

    /** {@code if x := hparams.get(...)}: a zero multiplier is not written. */
    @Test
    void aZeroMultiplierIsLeftOut() throws IOException {
        ReferenceGguf g = DecoderReference.converted(folder("granite-zero", config(MULTIPLIERS.replace("\"residual_multiplier\": 0.22",
                "\"residual_multiplier\": 0"), "null")), "f16", false, tmp);
        assertThat(g.kv).doesNotContainKey("granite.residual_scale").containsKey("granite.embedding_scale");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"attention_multiplier\": 0.0078125, ||3|attention_multiplier",
            "\"logits_scaling\": 8.0, ||3|logits_scaling",
            "\"embedding_multiplier\": 12.0, |\"embedding_multiplier\": \"12\", |3|embedding_multiplier"})
    void aMissingOrBadMultiplierIsRefusedNamingIt(String from, String to, int exit, String named) throws IOException {
        Path dir = folder("granite-bad", config(MULTIPLIERS.replace(from, to == null ? "" : to), "null"));
        Path out = tmp.resolve("bad.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(exit);
        assertThat(r.err()).contains(named).doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /** gguf-py's granite has no rope_freqs tensor: the converter stops on a llama3 scaling, and amn refuses it. */
    @Test
    void aLlama3RopeScalingIsRefused() throws IOException {
        Path dir = folder("granite-llama3", config(MULTIPLIERS, Llama3RopeToGgufTest.LLAMA3));
        Path out = tmp.resolve("llama3.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("llama3").contains("granite");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass with Granite's multipliers: F32
     * within 1e-4 (measured 8.7e-8 relative), F16 3e-3 (2.2e-4); the same file against plain
     * llama's forward pass 0.85 off.
     */
    @ParameterizedTest
    @CsvSource({"f32,", "f16,", "f32,no-multipliers"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String variant) throws Exception {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's SentencePiece tokenizer.model is not here: llama.cpp needs a vocabulary; not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, "granite", List.of("--sp", sp.get().toString(), "--seed", "3"), dtype, variant, 0.1);
    }
}
