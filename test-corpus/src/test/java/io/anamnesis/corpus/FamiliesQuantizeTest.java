package io.anamnesis.corpus;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A llama-quantize type in the same pass as the conversion, for the families whose layouts have their own
 * tensor kinds (packed, fused or stacked experts, routers and selection biases, fused gate/up, xIELU arrays,
 * LayerNorm biases): {@code amn convert FOLDER --to gguf --dtype q4_k_m} is byte for byte llama.cpp's
 * {@code llama_model_quantize} (the oracles' {@code llama_ref.py quantize}, what {@code llama-quantize} runs) of
 * the converter's default output, which {@code amn convert --dtype auto} is ({@link ConverterParityTest}). Each
 * folder is {@code decoder_reference.py make}'s, without a vocabulary.
 */
class FamiliesQuantizeTest {
    @TempDir
    Path tmp;

    @ParameterizedTest
    @CsvSource({"qwen3vlmoe, Q4_K_M", "qwen3vl, Q5_K_S", "granitemoeshared, Q4_K_M", "minimax_m2, Q4_K_M", "minimax_m2, Q3_K_M",
            "lfm2moe, Q4_K_M", "apertus, Q6_K", "starcoder2, Q4_K_M", "mistral3 --ministral3, Q4_K_M", "phi2, Q4_K_M", "gptneox, Q4_K_M",
            "gpt2, Q4_K_M", "gpt2 --prefix --masks, Q5_K_M", "starcoder, Q4_K_M", "bloom, Q4_K_M",
            "stablelm --parallel, Q4_K_M", "olmo --clip 8.0, Q4_K_M",
            "falcon --new-arch, Q4_K_M", "exaone --llama3 8192, Q4_K_M", "minicpm --untied, Q4_K_M", "nemotron, Q4_K_M", "deepseek, Q4_K_M", "internlm2 --dynamic, Q4_K_M", "orion, Q4_K_M", "mpt --clip 1, Q4_K_M"})
    void aQuantizedConversionIsLlamaQuantizeOfTheConvertersFile(String make, String type) throws Exception {
        Path oracles = DecoderReference.oracles();
        Path dir = tmp.resolve("folder");
        List<String> args = new ArrayList<>(List.of(make.split(" ")));
        args.add(1, dir.toString());
        args.addAll(List.of("--seed", "9"));
        DecoderReference.make(tmp, args.toArray(String[]::new));
        Path auto = tmp.resolve("auto.gguf"), ref = tmp.resolve("ref.gguf"), ours = tmp.resolve("ours.gguf");
        CorpusCliTest.Run a = DecoderReference.convert(dir, "auto", auto, false);
        assertThat(a.code()).as(a.err()).isZero();
        Process p = new ProcessBuilder("python3", oracles.resolve("llama_ref.py").toString(), "quantize", auto.toString(), ref.toString(),
                type).redirectErrorStream(true).start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(300, TimeUnit.SECONDS) && p.exitValue() == 0).as("llama_ref.py quantize: " + log).isTrue();
        CorpusCliTest.Run q = DecoderReference.convert(dir, type.toLowerCase(java.util.Locale.ROOT), ours, false);
        assertThat(q.code()).as(q.err()).isZero();
        ReferenceGguf want = ReferenceGguf.read(ref), got = ReferenceGguf.read(ours);
        assertThat(got.tensors.stream().map(t -> t.name() + ":" + t.type()).toList()).as(make + " " + type + ": the types chosen")
                .isEqualTo(want.tensors.stream().map(t -> t.name() + ":" + t.type()).toList());
        assertThat(Files.readAllBytes(ours)).as(make + " " + type + ": byte for byte llama_model_quantize of the converter's file")
                .isEqualTo(Files.readAllBytes(ref));
    }
}
