package io.anamnesis.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

import static io.anamnesis.cli.Runs.amn;
import static org.assertj.core.api.Assertions.assertThat;

class RememberTest {
    @TempDir
    Path dir;

    private static int[] ints(byte[] b) {
        int[] out = new int[b.length / 4];
        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().get(out);
        return out;
    }

    private static short[] shorts(byte[] b) {
        short[] out = new short[b.length / 2];
        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).asShortBuffer().get(out);
        return out;
    }

    @Test
    void remembersToF32BesideTheInputWithTheDerivedName() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(Fakes.amn(), "remember", "--to", "f32", f.toString());
        assertThat(r.code()).as(r.err()).isZero();
        Path out = dir.resolve("model-f32.safetensors");
        assertThat(r.out()).startsWith("wrote " + out + ": 2 tensors, 1 recovered to f32 (toy int8 x scale)");
        Map<String, String> meta = new LinkedHashMap<>();
        Map<String, Runs.Stored> t = Runs.readSafetensors(out, meta);
        assertThat(t.keySet()).containsExactly("layer", "norm");
        assertThat(meta).containsEntry("format", "fake").containsEntry("note", "two\nlines");
        assertThat(t.get("layer").dtype()).isEqualTo("F32");
        assertThat(t.get("layer").shape()).containsExactly(2, 2);
        // {1, -2, 3, 127} x 0.25 = {0.25, -0.5, 0.75, 31.75}
        assertThat(ints(t.get("layer").bytes())).containsExactly(0x3E800000, 0xBF000000, 0x3F400000, 0x41FE0000);
        assertThat(t.get("norm").dtype()).isEqualTo("F32");
        assertThat(ints(t.get("norm").bytes())).containsExactly(0x3F000000, 0x40000000);
    }

    @Test
    void dequantizeAliasDefaultsToBf16AndHonoursOutputAndThreads() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Path out = dir.resolve("chosen.safetensors");
        Runs.Run r = amn(Fakes.amn(), "dequantize", f.toString(), "-o", out.toString(), "--threads", "3", "--quiet");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).isEmpty();
        Map<String, Runs.Stored> t = Runs.readSafetensors(out, new LinkedHashMap<>());
        assertThat(t.get("layer").dtype()).isEqualTo("BF16");
        assertThat(shorts(t.get("layer").bytes())).containsExactly((short) 0x3E80, (short) 0xBF00, (short) 0x3F40, (short) 0x41FE);
        // passthrough keeps its own dtype
        assertThat(t.get("norm").dtype()).isEqualTo("F32");
    }

    @Test
    void outputFolderGetsTheDerivedName() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Path sub = Files.createDirectory(dir.resolve("out"));
        Runs.Run r = amn(Fakes.amn(), "remember", "--to", "f16", "-o", sub.toString(), f.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(sub.resolve("model-f16.safetensors")).isRegularFile();
    }

    @Test
    void convertWritesWithTheTargetFormatsWriter() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(Fakes.amn(), "convert", f.toString(), "--to", "safetensors", "--dtype", "f32");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(dir.resolve("model-f32.safetensors")).isRegularFile();
    }

    @Test
    void convertAsStoredCopiesEveryTensorUnchanged() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "gptq-looking");
        Runs.Run r = amn(Fakes.amn(), "convert", f.toString(), "--to", "safetensors", "--as-stored");
        assertThat(r.code()).as(r.err()).isZero();
        Map<String, Runs.Stored> t = Runs.readSafetensors(dir.resolve("model-stored.safetensors"), new LinkedHashMap<>());
        assertThat(t.keySet()).containsExactly("layer.q", "layer.s", "norm", "mlp.qweight");
        assertThat(t.get("layer.q").dtype()).isEqualTo("I8");
        assertThat(t.get("layer.q").bytes()).containsExactly(1, -2, 3, 127);
        assertThat(ints(t.get("layer.s").bytes())).containsExactly(0x3E800000);
    }

    @Test
    void convertToAFormatWithoutWriterNamesTheModule() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(Fakes.amn(), "convert", f.toString(), "--to", "gguf");
        assertThat(r.code()).isEqualTo(6);
        assertThat(r.err()).isEqualTo("amn: no installed writer for gguf: add io.anamnesis:anamnesis-format-gguf"
                + " (module io.anamnesis.format.gguf)" + System.lineSeparator());
    }

    @Test
    void failingProducerLeavesNoFileAndNoTemporary() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "baddata");
        Runs.Run r = amn(Fakes.amn(), "remember", f.toString());
        assertThat(r.code()).isEqualTo(3);
        assertThat(r.err()).isEqualTo("amn: tensor 'norm': data runs past the end of the file" + System.lineSeparator());
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactly("model.fake");
        }
    }

    @Test
    void refusesToOverwriteTheInput() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(Fakes.amn(), "remember", f.toString(), "-o", f.toString());
        assertThat(r.code()).isEqualTo(2);
        assertThat(Files.readString(f)).isEqualTo("FAKE ok\n");
    }

    @Test
    void missingOutputFolderIsAnIoErrorBeforeAnyWork() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(Fakes.amn(), "remember", f.toString(), "-o", dir.resolve("no/such/out.safetensors").toString());
        assertThat(r.code()).isEqualTo(7);
        assertThat(r.err()).contains("does not exist");
    }
}
