package io.anamnesis.corpus;

import io.anamnesis.api.DType;
import io.anamnesis.api.ForgetOptions;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.spi.WriteOptions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

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
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Hugging Face folder to GGUF beyond the corpus cases: a quantized folder (FP8 with block
 * scales, built here) converted straight, against the conversion of its recovered BF16
 * folder; a llama-quantize type in the same pass, against llama.cpp's own
 * {@code llama_model_quantize} of the converter's file; and the bad inputs of issue 17. The
 * model folder is the corpus' {@code gen-bf16-to-bf16/input} (skipped, saying so, without it).
 */
class HfToGgufTest {
    @TempDir
    Path tmp;
    private Path base;

    @BeforeEach
    void setUp() throws IOException {
        Path hf = CorpusCase.hfRoot().orElse(null);
        Assumptions.assumeTrue(hf != null, "shared corpus-hf not found: the model folder these tests start from is missing");
        base = hf.resolve("hf-to-gguf/gen-bf16-to-bf16");
    }

    /** A copy of the case's input folder as {@code <parent>/model}. */
    private Path copyInput(String parent) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(parent).resolve("model"));
        try (var files = Files.list(base.resolve("input"))) {
            for (Path f : files.toList()) Files.copy(f, dir.resolve(f.getFileName()));
        }
        return dir;
    }

    @ParameterizedTest
    @ValueSource(strings = {"f32", "bf16", "f16", "auto"})
    void fp8FolderConvertsAsItsRecoveredBf16Folder(String outtype) throws IOException {
        Path fp8 = copyInput("fp8");
        Map<String, ReferenceSafetensors.Tensor> bf16 = ReferenceSafetensors.read(fp8.resolve("model.safetensors"));
        Map<String, ReferenceSafetensors.Tensor> quantized = new LinkedHashMap<>();
        Random random = new Random(17);
        for (var e : bf16.entrySet()) {
            String name = e.getKey();
            long[] shape = e.getValue().shape();
            if (shape.length != 2 || name.contains("embed_tokens") || name.startsWith("lm_head")) {
                quantized.put(name, e.getValue());
                continue;
            }
            // E4M3 codes without NaN (0x7F, 0xFF); power-of-two block scales, so the BF16 recovery is exact
            byte[] codes = new byte[(int) (shape[0] * shape[1])];
            for (int i = 0; i < codes.length; i++) {
                int b;
                do b = random.nextInt(256); while ((b & 0x7F) == 0x7F);
                codes[i] = (byte) b;
            }
            long sr = (shape[0] + 127) / 128, sc = (shape[1] + 127) / 128;
            ByteBuffer scales = ByteBuffer.allocate((int) (4 * sr * sc)).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < sr * sc; i++) scales.putFloat((float) Math.scalb(1.0, -4 - random.nextInt(4)));
            quantized.put(name, new ReferenceSafetensors.Tensor("F8_E4M3", shape, codes));
            quantized.put(name.replace(".weight", ".weight_scale_inv"), new ReferenceSafetensors.Tensor("F32", new long[]{sr, sc}, scales.array()));
        }
        writeSafetensors(fp8.resolve("model.safetensors"), quantized);
        String config = Files.readString(fp8.resolve("config.json"));
        Files.writeString(fp8.resolve("config.json"), config.replaceFirst("\\{", "{\"quantization_config\": {\"quant_method\": \"fp8\", "
                + "\"fmt\": \"e4m3\", \"activation_scheme\": \"dynamic\", \"weight_block_size\": [128, 128]},"));

        Path recovered = copyInput("recovered");
        Files.delete(recovered.resolve("model.safetensors"));
        CorpusApiTest.AMN.convert(fp8.resolve("model.safetensors"), "safetensors", DType.BF16, recovered.resolve("model.safetensors"),
                WriteOptions.threads(2));
        assertThat(ReferenceSafetensors.read(recovered.resolve("model.safetensors")).get("model.layers.0.self_attn.q_proj.weight")
                .dtype()).isEqualTo("BF16");

        Path straight = tmp.resolve("straight.gguf"), viaBf16 = tmp.resolve("via-bf16.gguf");
        CorpusApiTest.AMN.export(fp8, "gguf", outtype, true, ForgetOptions.defaults(), new LossMeter(), straight, WriteOptions.threads(2));
        CorpusApiTest.AMN.export(recovered, "gguf", outtype, true, ForgetOptions.defaults(), new LossMeter(), viaBf16, WriteOptions.threads(2));
        ReferenceGguf s = ReferenceGguf.read(straight);
        assertThat(s.tensors).hasSize(21);
        assertThat(s.tensor("blk.0.attn_q.weight").bytes()).as("the FP8 values made it through").isNotEqualTo(
                new byte[s.tensor("blk.0.attn_q.weight").bytes().length]);
        assertThat(Files.readAllBytes(straight)).as(outtype + ": FP8 folder straight = its recovered BF16 folder")
                .isEqualTo(Files.readAllBytes(viaBf16));
    }

    /** A llama-quantize type in the same pass is llama.cpp's {@code llama_model_quantize} of the converter's auto output. */
    @ParameterizedTest
    @ValueSource(strings = {"q4_k_m", "q5_0", "q6_k", "q8_0_pure"})
    void quantizerTargetIsLlamaQuantizeOfTheConverterFile(String target) throws Exception {
        Path script = base.getParent().getParent().getParent().resolve("tools/oracles/llama_ref.py");
        var oracle = LlamaRunOracleTest.oracleMissing(script);
        Assumptions.assumeTrue(oracle.isEmpty(), () -> "llama.cpp oracle skipped: " + oracle.orElse(""));
        String type = target.replace("_pure", "");
        boolean pure = target.endsWith("_pure");
        Path ours = tmp.resolve("ours.gguf"), ref = tmp.resolve("ref.gguf");
        CorpusApiTest.AMN.export(base.resolve("input"), "gguf", type.equals("q8_0") ? "ggml:q8_0" : type, true,
                new ForgetOptions(Map.of(), java.util.Optional.empty(), pure, List.of()), new LossMeter(), ours, WriteOptions.threads(2));
        Assumptions.assumeTrue(!type.equals("q8_0"), "ggml:q8_0 has no llama-quantize twin; it ran");
        List<String> cmd = new ArrayList<>(List.of("python3", script.toString(), "quantize",
                base.resolve("expected.gguf").toString(), ref.toString(), type.toUpperCase()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(300, TimeUnit.SECONDS) && p.exitValue() == 0).as("llama_ref.py quantize: " + log).isTrue();
        byte[] want = Files.readAllBytes(ref), got = Files.readAllBytes(ours);
        if (!Arrays.equals(want, got)) {
            ReferenceGguf w = ReferenceGguf.read(ref), g = ReferenceGguf.read(ours);
            assertThat(List.copyOf(g.kv.keySet())).as(target + ": key order").isEqualTo(List.copyOf(w.kv.keySet()));
            for (ReferenceGguf.Tensor t : w.tensors) {
                assertThat(g.tensor(t.name()).type()).as(target + " type of " + t.name()).isEqualTo(t.type());
                assertThat(g.tensor(t.name()).bytes()).as(target + " bytes of " + t.name()).isEqualTo(t.bytes());
            }
        }
        assertThat(got).as(target + ": byte for byte llama_model_quantize of the converter's file").isEqualTo(want);
    }

    @Test
    void unknownArchitectureIsUnsupportedNamingIt() throws IOException {
        Path dir = copyInput("arch");
        edit(dir, "\"LlamaForCausalLM\"", "\"MambaForCausalLM\"");
        CorpusCliTest.Run r = convert(dir);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("MambaForCausalLM").contains("LlamaForCausalLM").contains("MistralForCausalLM");
    }

    @Test
    void configThatDisagreesWithTheShapesIsMalformedNamingTheKey() throws IOException {
        Path dir = copyInput("shape");
        edit(dir, "\"intermediate_size\": 256", "\"intermediate_size\": 512");
        CorpusCliTest.Run r = convert(dir);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("intermediate_size").contains("512").contains("256");

        Path heads = copyInput("heads");
        edit(heads, "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3");
        CorpusCliTest.Run h = convert(heads);
        assertThat(h.code()).as(h.err()).isEqualTo(3);
        assertThat(h.err()).contains("num_key_value_heads");

        Path layers = copyInput("layers");
        edit(layers, "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1");
        CorpusCliTest.Run l = convert(layers);
        assertThat(l.code()).as(l.err()).isEqualTo(3);
        assertThat(l.err()).contains("num_hidden_layers");
    }

    /** Two tensors that become one GGUF name were an internal error (the plan's duplicate name); now exit 3 naming both. */
    @Test
    void twoTensorsThatBecomeOneGgufNameAreMalformedNamingBoth() throws IOException {
        Path dir = copyInput("duplicate");
        Map<String, ReferenceSafetensors.Tensor> all = new LinkedHashMap<>(ReferenceSafetensors.read(dir.resolve("model.safetensors")));
        all.put("layers.0.self_attn.q_proj.weight", all.get("model.layers.0.self_attn.q_proj.weight"));
        Files.delete(dir.resolve("model.safetensors"));
        writeSafetensors(dir.resolve("model.safetensors"), all);
        CorpusCliTest.Run r = convert(dir);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("'blk.0.attn_q.weight'")
                .contains("(layers.0.self_attn.q_proj.weight and model.layers.0.self_attn.q_proj.weight)");
        assertThat(Files.exists(tmp.resolve("out.gguf"))).as("nothing written").isFalse();
    }

    @Test
    void missingTokenizerIsMalformedUnlessNoVocab() throws IOException {
        Path dir = copyInput("tok");
        Files.delete(dir.resolve("tokenizer.model"));
        CorpusCliTest.Run r = convert(dir);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("tokenizer.model").contains("--no-vocab");
        assertThat(Files.exists(tmp.resolve("out.gguf"))).as("no half-written output").isFalse();

        Path out = tmp.resolve("novocab.gguf");
        CorpusCliTest.Run ok = CorpusCliTest.amn("convert", dir.toString(), "--to", "gguf", "--no-vocab", "-o", out.toString(), "-q");
        assertThat(ok.code()).as(ok.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("tokenizer.ggml.model").asString()).isEqualTo("none");
        assertThat(g.kv).doesNotContainKey("tokenizer.ggml.tokens");
        // the same tensors as the converter's file at its default output type
        ReferenceGguf want = ReferenceGguf.read(base.resolve("expected.gguf"));
        for (ReferenceGguf.Tensor t : want.tensors) assertThat(g.tensor(t.name()).bytes()).isEqualTo(t.bytes());
    }

    @Test
    void shardedFolderIsOneModel() throws IOException {
        // two shards and an index: the converter's order is shard by shard, names sorted in each
        Path dir = copyInput("sharded");
        Map<String, ReferenceSafetensors.Tensor> all = ReferenceSafetensors.read(dir.resolve("model.safetensors"));
        Files.delete(dir.resolve("model.safetensors"));
        Map<String, ReferenceSafetensors.Tensor> first = new LinkedHashMap<>(), second = new LinkedHashMap<>();
        StringBuilder map = new StringBuilder();
        for (var e : all.entrySet()) {
            boolean one = e.getKey().startsWith("model.layers.0.") || e.getKey().startsWith("model.embed");
            (one ? first : second).put(e.getKey(), e.getValue());
            map.append(map.isEmpty() ? "" : ",").append('"').append(e.getKey()).append("\":\"model-0000")
                    .append(one ? 1 : 2).append("-of-00002.safetensors\"");
        }
        writeSafetensors(dir.resolve("model-00001-of-00002.safetensors"), first);
        writeSafetensors(dir.resolve("model-00002-of-00002.safetensors"), second);
        Files.writeString(dir.resolve("model.safetensors.index.json"), "{\"metadata\":{},\"weight_map\":{" + map + "}}");
        Path out = tmp.resolve("sharded.gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", dir.toString(), "--to", "gguf", "--dtype", "bf16", "-o", out.toString(), "-q");
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out), want = ReferenceGguf.read(base.resolve("expected.gguf"));
        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names.subList(0, 11)).as("shard 1 first").containsExactly("token_embd.weight", "blk.0.attn_norm.weight",
                "blk.0.ffn_down.weight", "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight", "blk.0.ffn_norm.weight",
                "blk.0.attn_k.weight", "blk.0.attn_output.weight", "blk.0.attn_q.weight", "blk.0.attn_v.weight",
                "output.weight");
        for (ReferenceGguf.Tensor t : want.tensors) assertThat(g.tensor(t.name()).bytes()).as(t.name()).isEqualTo(t.bytes());
        assertThat(g.kv.keySet()).containsExactlyElementsOf(want.kv.keySet());
    }

    /**
     * BF16 weights written as BF16 are their stored bytes (copied, not widened and rounded),
     * so the edge patterns must come out as gguf-py's rounding of the widened value gives
     * them: every value as it is, a NaN with the quiet bit 0x0040 set; the q_proj rows in
     * LlamaModel.permute's order. F32 is the exact widening. Both worked out here from the
     * input bytes.
     */
    @Test
    void storedBf16EdgeValuesComeOutAsTheConverterRoundsThem() throws IOException {
        Path dir = copyInput("edges");
        Map<String, ReferenceSafetensors.Tensor> tensors = ReferenceSafetensors.read(dir.resolve("model.safetensors"));
        short[] edges = {0x7F81, (short) 0xFF81, 0x7FC1, 0x7F80, (short) 0xFF80, (short) 0x8000, 0x0001, (short) 0x807F,
                0x7FFF, (short) 0xFFBF};
        String q = "model.layers.0.self_attn.q_proj.weight", o = "model.layers.0.self_attn.o_proj.weight";
        for (String name : List.of(q, o)) {
            byte[] b = tensors.get(name).bytes();
            for (int i = 0; i < edges.length; i++) {
                int at = 2 * (i * 131 + 7); // spread over rows, so the permutation moves them
                b[at] = (byte) edges[i];
                b[at + 1] = (byte) (edges[i] >> 8);
            }
        }
        writeSafetensors(dir.resolve("model.safetensors"), tensors);
        long[] shape = tensors.get(q).shape();
        int rows = (int) shape[0], cols = (int) shape[1], headDim = rows / 4; // num_attention_heads 4

        for (String outtype : List.of("bf16", "f32")) {
            Path out = tmp.resolve(outtype + ".gguf");
            CorpusApiTest.AMN.export(dir, "gguf", outtype, true, ForgetOptions.defaults(), LossMeter.off(), out, WriteOptions.threads(2));
            ReferenceGguf g = ReferenceGguf.read(out);
            for (String name : List.of(q, o)) {
                ByteBuffer in = ByteBuffer.wrap(tensors.get(name).bytes()).order(ByteOrder.LITTLE_ENDIAN);
                ByteBuffer got = ByteBuffer.wrap(g.tensor(name.equals(q) ? "blk.0.attn_q.weight" : "blk.0.attn_output.weight")
                        .bytes()).order(ByteOrder.LITTLE_ENDIAN);
                for (int r = 0; r < rows; r++) {
                    int h = r / headDim, w = r % headDim;
                    int src = name.equals(q) ? h * headDim + (w % 2) * (headDim / 2) + w / 2 : r;
                    for (int c = 0; c < cols; c++) {
                        int bits = in.getShort(2 * (src * cols + c)) & 0xFFFF;
                        boolean nan = (bits & 0x7FFF) > 0x7F80;
                        if (outtype.equals("bf16")) {
                            assertThat(got.getShort(2 * (r * cols + c)) & 0xFFFF).as("%s row %d col %d", name, r, c)
                                    .isEqualTo(nan ? bits | 0x0040 : bits);
                        } else {
                            assertThat(got.getInt(4 * (r * cols + c))).as("%s row %d col %d", name, r, c).isEqualTo(bits << 16);
                        }
                    }
                }
            }
        }
    }

    private CorpusCliTest.Run convert(Path dir) {
        return CorpusCliTest.amn("convert", dir.toString(), "--to", "gguf", "-o", tmp.resolve("out.gguf").toString(), "-q");
    }

    private static void edit(Path dir, String from, String to) throws IOException {
        String config = Files.readString(dir.resolve("config.json"));
        assertThat(config).contains(from);
        Files.writeString(dir.resolve("config.json"), config.replace(from, to));
    }

    /** A model folder {@code tmp/name} with {@code config} as its config.json and {@code tensors} as its model.safetensors. */
    static Path folder(Path tmp, String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        Files.writeString(dir.resolve("config.json"), config);
        writeSafetensors(dir.resolve("model.safetensors"), tensors);
        return dir;
    }

    static void writeSafetensors(Path file, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        StringBuilder header = new StringBuilder("{");
        long offset = 0;
        for (var e : tensors.entrySet()) {
            if (header.length() > 1) header.append(',');
            long[] s = e.getValue().shape();
            header.append('"').append(e.getKey()).append("\":{\"dtype\":\"").append(e.getValue().dtype()).append("\",\"shape\":[");
            for (int i = 0; i < s.length; i++) header.append(i == 0 ? "" : ",").append(s[i]);
            header.append("],\"data_offsets\":[").append(offset).append(',').append(offset + e.getValue().bytes().length).append("]}");
            offset += e.getValue().bytes().length;
        }
        header.append('}');
        while (header.length() % 8 != 0) header.append(' ');
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(header.length()).array());
        out.writeBytes(header.toString().getBytes(StandardCharsets.UTF_8));
        for (var t : tensors.values()) out.writeBytes(t.bytes());
        Files.write(file, out.toByteArray());
    }
}
