package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Assumptions;
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
import java.util.Optional;
import java.util.stream.Stream;

import static io.anamnesis.corpus.CorpusCliTest.amn;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code amn forget} to GGUF with every installed module, on inputs built here: the exit
 * code and message of each kind of bad request, and the one-pass {@code convert --dtype}.
 * Only F32 is encoded here (it needs no ggml encoder), so these run before the encoders land.
 */
class ForgetCliTest {
    @TempDir
    Path dir;

    record T(String dtype, long[] shape, byte[] bytes) {
    }

    /** A safetensors file of these tensors, in this order. */
    static Path safetensors(Path file, Map<String, T> tensors) throws IOException {
        StringBuilder h = new StringBuilder("{");
        long offset = 0;
        for (var e : tensors.entrySet()) {
            if (h.length() > 1) h.append(',');
            StringBuilder shape = new StringBuilder();
            for (long d : e.getValue().shape()) shape.append(shape.isEmpty() ? "" : ",").append(d);
            h.append('"').append(e.getKey()).append("\":{\"dtype\":\"").append(e.getValue().dtype()).append("\",\"shape\":[")
                    .append(shape).append("],\"data_offsets\":[").append(offset).append(',')
                    .append(offset + e.getValue().bytes().length).append("]}");
            offset += e.getValue().bytes().length;
        }
        h.append('}');
        while (h.length() % 8 != 0) h.append(' ');
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(h.length()).array());
        out.writeBytes(h.toString().getBytes(StandardCharsets.UTF_8));
        for (T t : tensors.values()) out.writeBytes(t.bytes());
        return Files.write(file, out.toByteArray());
    }

    static T f16(long rows, long cols) {
        ByteBuffer b = ByteBuffer.allocate((int) (2 * rows * cols)).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < rows * cols; i++) b.putShort(Float.floatToFloat16((i % 17 - 8) / 16f));
        return new T("F16", new long[]{rows, cols}, b.array());
    }

    Path model() throws IOException {
        Map<String, T> m = new LinkedHashMap<>();
        m.put("blk.0.ffn_up.weight", f16(2, 256));
        m.put("blk.0.ffn_norm.weight", f16(1, 256));
        return safetensors(dir.resolve("model.safetensors"), m);
    }

    private List<String> files() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void anUnknownTypeIsAUsageErrorListingTheTypes() throws IOException {
        Path in = model();
        CorpusCliTest.Run r = amn("forget", in.toString(), "--to", "q4_k_x");
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).contains("unknown target 'q4_k_x'; targets: ").contains("q4_k_m").contains("iq2_xxs")
                .contains("ggml:q4_k").contains("nvfp4");
    }

    @Test
    void aTypeThatNeedsAnImportanceMatrixWithoutOneIsAUsageErrorThatSaysSo() throws IOException {
        Path in = model();
        for (String to : List.of("ggml:iq2_xxs", "iq2_xs", "iq1_s", "q2_k_s")) {
            CorpusCliTest.Run r = amn("forget", in.toString(), "--to", to, "-o", dir.resolve("o.gguf").toString());
            assertThat(r.code()).as(to + ": " + r.err()).isEqualTo(2);
            assertThat(r.err()).as(to).contains("tensor 'blk.0.ffn_up.weight'").contains("needs an importance matrix (--imatrix)");
        }
        assertThat(files()).containsExactly("model.safetensors");
    }

    @Test
    void anImportanceMatrixThatDoesNotFitIsMalformedNamingTheTensor() throws IOException {
        Path in = model();
        byte[] name = "blk.0.ffn_up.weight".getBytes(StandardCharsets.UTF_8);
        ByteBuffer dat = ByteBuffer.allocate(4 + 4 + name.length + 8 + 400).order(ByteOrder.LITTLE_ENDIAN);
        dat.putInt(1).putInt(name.length).put(name).putInt(1).putInt(100);
        for (int i = 0; i < 100; i++) dat.putFloat(1);
        Path imatrix = Files.write(dir.resolve("imatrix.dat"), dat.array());
        CorpusCliTest.Run r = amn("forget", in.toString(), "--to", "ggml:f32", "--imatrix", imatrix.toString(),
                "-o", dir.resolve("o.gguf").toString());
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("tensor 'blk.0.ffn_up.weight'").contains("holds 100 values").contains("needs 256");
        // not an importance matrix at all
        CorpusCliTest.Run notOne = amn("forget", in.toString(), "--to", "ggml:f32", "--imatrix", in.toString(),
                "-o", dir.resolve("o.gguf").toString());
        assertThat(notOne.code()).isEqualTo(3);
        assertThat(notOne.err()).contains("not an importance matrix");
        assertThat(files()).containsExactly("imatrix.dat", "model.safetensors");
    }

    @Test
    void aNonFloatTensorToQuantizeIsUnsupported() throws IOException {
        Map<String, T> m = new LinkedHashMap<>();
        m.put("ids.weight", new T("I32", new long[]{2, 32}, new byte[256]));
        Path in = safetensors(dir.resolve("ints.safetensors"), m);
        CorpusCliTest.Run r = amn("forget", in.toString(), "--to", "ggml:f32", "-o", dir.resolve("o.gguf").toString());
        assertThat(r.code()).isEqualTo(6);
        assertThat(r.err()).contains("tensor 'ids.weight'").contains("I32, not floats");
        // --keep leaves it as it is
        CorpusCliTest.Run kept = amn("forget", in.toString(), "--to", "ggml:f32", "--keep", "^ids", "-o", dir.resolve("o.gguf").toString());
        assertThat(kept.code()).as(kept.err()).isZero();
        assertThat(kept.out()).contains("kept 1 as I32 (--keep)");
    }

    @Test
    void forgetWritesGgufReportsWhatWasLostAndFollowsTheOverwriteRule() throws IOException {
        Path in = model();
        Path out = dir.resolve("model-f32.gguf");
        Files.writeString(out, "an older file");
        Path report = dir.resolve("loss.json");
        CorpusCliTest.Run r = amn("forget", in.toString(), "--to", "ggml:f32", "-o", out.toString(), "--report", report.toString());
        assertThat(r.code()).as(r.err()).isZero();
        // F16 widened to F32 loses nothing
        assertThat(r.out()).startsWith("wrote " + out + ": 2 tensors, 1 quantized to ggml:f32, 1 kept")
                .contains("kept 1 as f32 (1-D tensors stay as they are)")
                .contains("lost: MAE 0.000, RMSE 0.000, max |error| 0.000, SNR inf dB over 512 values");
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.tensors).extracting(ReferenceGguf.Tensor::name).containsExactly("blk.0.ffn_norm.weight", "blk.0.ffn_up.weight");
        assertThat(g.kv.get("general.file_type").asLong()).isZero();
        assertThat(g.kv.get("general.quantization_version").asLong()).isEqualTo(2);
        float first = ByteBuffer.wrap(g.tensor("blk.0.ffn_up.weight").bytes()).order(ByteOrder.LITTLE_ENDIAN).getFloat(0);
        assertThat(first).isEqualTo(-0.5f);
        JsonNode json = new ObjectMapper().readTree(report.toFile());
        assertThat(json.get("tensors").get(1).get("becomes").asText()).isEqualTo("f32");
        // the input itself is refused as output
        CorpusCliTest.Run self = amn("forget", in.toString(), "--to", "ggml:f32", "-o", in.toString());
        assertThat(self.code()).isEqualTo(2);
    }

    @Test
    void convertRecoversFp8AndQuantizesToGgufInOnePass() throws IOException {
        Optional<Path> sample = CorpusCliTest.sample();
        Assumptions.assumeTrue(sample.isPresent(), "samples/tiny-fp8.safetensors not found");
        Path gguf = dir.resolve("tiny.gguf");
        CorpusCliTest.Run r = amn("convert", sample.get().toString(), "--to", "gguf", "--dtype", "ggml:f32", "-o", gguf.toString());
        assertThat(r.code()).as(r.err()).isZero();
        Path f32 = dir.resolve("tiny-f32.safetensors");
        assertThat(amn("remember", "--quiet", "--to", "f32", "-o", f32.toString(), sample.get().toString()).code()).isZero();
        Map<String, ReferenceSafetensors.Tensor> recovered = ReferenceSafetensors.read(f32);
        ReferenceGguf g = ReferenceGguf.read(gguf);
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name).sorted().toList())
                .isEqualTo(recovered.keySet().stream().sorted().toList());
        for (var e : recovered.entrySet()) {
            if (!e.getValue().dtype().equals("F32")) continue;
            assertThat(g.tensor(e.getKey()).bytes()).as(e.getKey()).isEqualTo(e.getValue().bytes());
        }
        // a format the target does not write
        CorpusCliTest.Run wrong = amn("convert", sample.get().toString(), "--to", "safetensors", "--dtype", "q4_k_m");
        assertThat(wrong.code()).isEqualTo(2);
        assertThat(wrong.err()).contains("makes gguf files, not safetensors; use --to gguf");
    }
}
