package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

import static io.anamnesis.cli.Runs.amn;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The command line against special files and streams (issue 8, items 1 to 5 and 7), with
 * the installed format modules: outputs that are links, devices, FIFOs or standard output,
 * inputs that are pipes, headers on standard input, and the hints and names around them.
 */
class SpecialFilesTest {
    @TempDir
    Path dir;

    static final Anamnesis INSTALLED = Anamnesis.installed();

    /** A plain safetensors file: one F32 [2, 3] tensor with the values 0..5. */
    static byte[] safetensors(String json, byte[] data) {
        byte[] j = json.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + j.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
        return b.putLong(j.length).put(j).put(data).array();
    }

    static byte[] plain() {
        ByteBuffer d = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < 6; i++) d.putFloat(i);
        return safetensors("{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", d.array());
    }

    Path input() throws IOException {
        return Files.write(dir.resolve("model.safetensors"), plain());
    }

    static String type(Path p) throws IOException {
        int mode = (Integer) Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 0170000;
        return mode == 0020000 ? "character device" : mode == 0010000 ? "fifo" : mode == 0120000 ? "symlink"
                : mode == 0100000 ? "regular" : Integer.toOctalString(mode);
    }

    private long leftovers() throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(p -> p.getFileName().toString().contains(".tmp-")).count();
        }
    }

    /** What the run wrote, as the safetensors reader of the test sees it: the tensor w's floats. */
    static float[] floatsOf(byte[] file) {
        long n = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
        ByteBuffer d = ByteBuffer.wrap(file, (int) (8 + n), file.length - (int) (8 + n)).order(ByteOrder.LITTLE_ENDIAN);
        float[] out = new float[d.remaining() / 4];
        for (int i = 0; i < out.length; i++) out[i] = d.getFloat();
        return out;
    }

    @Test
    void devNullIsASinkAndStaysACharacterDevice() throws IOException {
        Runs.Run r = amn(INSTALLED, "remember", input().toString(), "--to", "f32", "-o", "/dev/null");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).startsWith("wrote /dev/null: 1 tensor");
        assertThat(type(Path.of("/dev/null"))).isEqualTo("character device");
    }

    @Test
    void aSymbolicLinkOutputIsFollowedAndStays() throws IOException {
        Path target = dir.resolve("real.safetensors");
        Files.write(target, new byte[]{0});
        Path link = Files.createSymbolicLink(dir.resolve("link.safetensors"), target);
        Runs.Run r = amn(INSTALLED, "remember", input().toString(), "--to", "f32", "-o", link.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(type(link)).isEqualTo("symlink");
        assertThat(floatsOf(Files.readAllBytes(target))).containsExactly(0, 1, 2, 3, 4, 5);
        assertThat(leftovers()).isZero();
    }

    @Test
    @Timeout(60) // a hang guard: the FIFO's reader is in this test
    void aFifoOutputIsWrittenStraightThrough() throws Exception {
        Path fifo = dir.resolve("out.safetensors");
        assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).isZero();
        CompletableFuture<byte[]> read = CompletableFuture.supplyAsync(() -> {
            try {
                return Files.readAllBytes(fifo);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        Runs.Run r = amn(INSTALLED, "remember", input().toString(), "--to", "f32", "-o", fifo.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(floatsOf(read.get())).containsExactly(0, 1, 2, 3, 4, 5);
        assertThat(type(fifo)).isEqualTo("fifo");
    }

    @Test
    void dashWritesToStandardOutputAndTheSummaryToStandardError() throws IOException {
        PrintStream saved = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        Runs.Run r;
        try {
            System.setOut(new PrintStream(captured, false));
            r = amn(INSTALLED, "convert", input().toString(), "--to", "safetensors", "--dtype", "f32", "-o", "-");
        } finally {
            System.setOut(saved);
        }
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(floatsOf(captured.toByteArray())).containsExactly(0, 1, 2, 3, 4, 5);
        assertThat(r.out()).isEmpty();
        assertThat(r.err()).startsWith("wrote standard output: 1 tensor");
    }

    /**
     * forget and a quantizing convert to {@code -}: standard output holds the file and nothing
     * else, byte for byte what {@code -o FILE} writes; the summary goes to standard error.
     */
    @Test
    void forgetToDashWritesOnlyTheFileToStandardOutput() throws IOException {
        byte[] w = new byte[64 * 4];
        ByteBuffer b = ByteBuffer.wrap(w).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < 64; i++) b.putFloat((i - 31.5f) / 8);
        Path in = Files.write(dir.resolve("m.safetensors"),
                safetensors("{\"w.weight\":{\"dtype\":\"F32\",\"shape\":[2,32],\"data_offsets\":[0,256]}}", w));
        for (String[] line : new String[][]{{"forget", in.toString(), "--to", "ggml:q8_0"},
                {"convert", in.toString(), "--to", "gguf", "--dtype", "q8_0"}}) {
            Path file = dir.resolve(line[0] + ".gguf");
            Runs.Run toFile = amn(INSTALLED, concat(line, "-q", "-o", file.toString()));
            assertThat(toFile.code()).as(toFile.err()).isZero();
            PrintStream saved = System.out;
            ByteArrayOutputStream captured = new ByteArrayOutputStream();
            Runs.Run r;
            try {
                System.setOut(new PrintStream(captured, false));
                r = amn(INSTALLED, concat(line, "-o", "-"));
            } finally {
                System.setOut(saved);
            }
            assertThat(r.code()).as(r.err()).isZero();
            assertThat(captured.toByteArray()).as(line[0]).isEqualTo(Files.readAllBytes(file));
            assertThat(r.out()).as(line[0]).isEmpty();
            assertThat(r.err()).as(line[0]).contains("wrote standard output: 1 tensor, 1 quantized to");
        }
    }

    /**
     * An imatrix entry of 2^27 values (a sparse file: no disk) for a tensor the model lacks: its
     * values were loaded whole to check them (2^31 overflowed, exit 1; 2^29 took 2 GB of heap).
     * Past 2^26 values an entry is a limit now, exit 4, before anything is read or written.
     */
    @Test
    void anImportanceMatrixEntryPastTheLimitIsRefusedWithoutLoadingIt() throws IOException {
        byte[] name = "nope.weight".getBytes(StandardCharsets.UTF_8);
        ByteBuffer head = ByteBuffer.allocate(16 + name.length).order(ByteOrder.LITTLE_ENDIAN);
        head.putInt(1).putInt(name.length).put(name).putInt(1).putInt(1 << 27);
        Path dat = dir.resolve("huge.dat");
        try (var f = new java.io.RandomAccessFile(dat.toFile(), "rw")) {
            f.write(head.array());
            f.setLength(head.capacity() + 4L * (1 << 27));
        }
        Path out = dir.resolve("q.gguf");
        Runs.Run r = amn(INSTALLED, "forget", input().toString(), "--to", "q4_k_m", "--imatrix", dat.toString(), "-o", out.toString());
        assertThat(r.code()).as(r.err()).isEqualTo(4);
        assertThat(r.err()).contains("nope.weight").contains("134217728 values");
        assertThat(out).doesNotExist();
    }

    /** A GGUF target and an -o ending in '/' that does not exist: it wrote a file of that name (no extension). */
    @Test
    void aFolderThatDoesNotExistIsNotWrittenAsAFileOfItsName() throws IOException {
        for (String[] line : new String[][]{{"forget", input().toString(), "--to", "q8_0"},
                {"convert", input().toString(), "--to", "gguf"}}) {
            Runs.Run r = amn(INSTALLED, concat(line, "-o", dir.resolve("newdir") + "/"));
            assertThat(r.code()).as(String.join(" ", line) + ": " + r.err()).isEqualTo(7);
            assertThat(r.err()).contains("folder").contains("newdir does not exist");
            assertThat(dir.resolve("newdir")).doesNotExist();
        }
        Files.createDirectories(dir.resolve("newdir"));
        Runs.Run ok = amn(INSTALLED, "forget", input().toString(), "--to", "q8_0", "-q", "-o", dir.resolve("newdir") + "/");
        assertThat(ok.code()).as(ok.err()).isZero();
        assertThat(dir.resolve("newdir").resolve("model-q8_0.gguf")).exists();
    }

    private static String[] concat(String[] a, String... b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    @Test
    void anEmptyOutputIsAUsageError() throws IOException {
        Runs.Run r = amn(INSTALLED, "remember", input().toString(), "-o", "");
        assertThat(r.code()).isEqualTo(Amn.USAGE);
        assertThat(r.err()).contains("-o needs a path");
        assertThat(dir.resolve("model-bf16.safetensors")).doesNotExist();
    }

    @Test
    void anOutputNamedForAnotherFormatSuggestsConvert() throws IOException {
        Runs.Run r = amn(INSTALLED, "remember", input().toString(), "-o", dir.resolve("x.gguf").toString());
        assertThat(r.code()).isEqualTo(Amn.USAGE);
        assertThat(r.err()).contains("names a gguf file, but remember writes safetensors", "amn convert", "--to gguf");
        assertThat(dir.resolve("x.gguf")).doesNotExist();
        Runs.Run c = amn(INSTALLED, "convert", input().toString(), "--to", "gguf", "-o", dir.resolve("x.safetensors").toString());
        assertThat(c.code()).isEqualTo(Amn.USAGE);
        assertThat(c.err()).contains("names a safetensors file, but convert writes gguf", "--to safetensors");
    }

    @Test
    void anOutputNameOf255BytesIsWritten() throws IOException {
        String name = "m".repeat(255 - ".safetensors".length()) + ".safetensors";
        Runs.Run r = amn(INSTALLED, "remember", input().toString(), "--to", "f32", "-o", dir.resolve(name).toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(floatsOf(Files.readAllBytes(dir.resolve(name)))).containsExactly(0, 1, 2, 3, 4, 5);
    }

    @Test
    void aDirectoryOutputGetsTheDerivedNameAndASocketLikeTargetIsRefused() throws IOException {
        Path sub = Files.createDirectories(dir.resolve("out"));
        Runs.Run r = amn(INSTALLED, "remember", input().toString(), "-o", sub.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(sub.resolve("model-bf16.safetensors")).exists();
    }

    @Test
    @Timeout(60) // a hang guard: before the fix, opening the FIFO waited for a writer forever
    void aFifoInputIsRefusedAtOnce() throws Exception {
        Path fifo = dir.resolve("f.safetensors");
        assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).isZero();
        Runs.Run r = amn(INSTALLED, "inspect", fifo.toString());
        assertThat(r.code()).isEqualTo(7);
        assertThat(r.err()).contains("is not a regular file but a pipe, a device or a socket");
    }

    /** Serves a header, then fails the test if anything reads on: "headers only, never the payload". */
    static final class HeaderThenNothing extends InputStream {
        private final ByteArrayInputStream header;

        HeaderThenNothing(byte[] header) {
            this.header = new ByteArrayInputStream(header);
        }

        @Override
        public int read() {
            if (header.available() == 0) throw new AssertionError("read past the header");
            return header.read();
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (len == 0) return 0;
            if (header.available() == 0) throw new AssertionError("read past the header");
            return header.read(b, off, len);
        }
    }

    static Runs.Run withStdin(InputStream in, String... args) {
        InputStream saved = System.in;
        try {
            System.setIn(in);
            return amn(INSTALLED, args);
        } finally {
            System.setIn(saved);
        }
    }

    @Test
    void inspectDashReadsA50GbSafetensorsHeaderAndNothingMore() throws IOException {
        // 25 tensors of 2 GB each (F16 [1024, 1048576]) declared; only the header is sent
        StringBuilder json = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
        long offset = 0;
        long each = 2L * 1024 * 1048576;
        for (int i = 0; i < 25; i++) {
            json.append(",\"layers.").append(i).append(".weight\":{\"dtype\":\"F16\",\"shape\":[1024,1048576],")
                    .append("\"data_offsets\":[").append(offset).append(',').append(offset + each).append("]}");
            offset += each;
        }
        byte[] header = safetensors(json.append('}').toString(), new byte[0]);
        Runs.Run r = withStdin(new HeaderThenNothing(header), "inspect", "--json", "-");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.json().get("format").asText()).isEqualTo("safetensors");
        assertThat(r.json().get("tensor_count").asInt()).isEqualTo(25);
        assertThat(r.json().get("stored_bytes").asLong()).isEqualTo(25 * each);
        Runs.Run p = withStdin(new HeaderThenNothing(header), "parse", "-");
        assertThat(p.code()).as(p.err()).isZero();
        assertThat(p.out()).contains("layers.24.weight");
    }

    @Test
    void parseDashReadsAGgufHeader() {
        ByteBuffer b = ByteBuffer.allocate(256).order(ByteOrder.LITTLE_ENDIAN);
        b.put("GGUF".getBytes(StandardCharsets.US_ASCII)).putInt(3).putLong(1).putLong(1);
        b.putLong(20).put("general.architecture".getBytes(StandardCharsets.US_ASCII)).putInt(8)
                .putLong(5).put("llama".getBytes(StandardCharsets.US_ASCII));
        b.putLong(3).put("t.w".getBytes(StandardCharsets.US_ASCII)).putInt(2).putLong(4096).putLong(4096).putInt(0).putLong(0);
        byte[] header = java.util.Arrays.copyOf(b.array(), b.position());
        Runs.Run r = withStdin(new HeaderThenNothing(header), "parse", "--json", "-");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("\"t.w\"", "\"F32\"");
    }

    @Test
    void aZipOnStandardInputIsRefusedWithTheReason() {
        byte[] zip = {'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0, 0};
        Runs.Run r = withStdin(new ByteArrayInputStream(zip), "inspect", "-");
        assertThat(r.code()).isEqualTo(6);
        assertThat(r.err()).contains("zip-based", "directory is at the end");
    }

    @Test
    void aTextFileNamedSafetensorsIsMalformedNotALimit() throws IOException {
        Path f = Files.writeString(dir.resolve("notes.safetensors"), "these are my notes, not tensors\n");
        Runs.Run r = amn(INSTALLED, "inspect", f.toString());
        assertThat(r.code()).isEqualTo(3);
        assertThat(r.err()).contains("not a safetensors file");
    }

    @Test
    void aScaleWithoutItsWeightIsMalformedAndNamesNoInstalledModule() throws IOException {
        Path f = Files.write(dir.resolve("scale.safetensors"), safetensors(
                "{\"x.weight_scale\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}", new byte[4]));
        Runs.Run r = amn(INSTALLED, "remember", f.toString(), "-o", dir.resolve("o.safetensors").toString());
        assertThat(r.code()).isEqualTo(3);
        assertThat(r.err()).contains("it has no x.weight to belong to").doesNotContain("add io.anamnesis");
    }

    @Test
    void aFormatReadButNotWrittenSaysSoAndListsTheWriters() throws IOException {
        Runs.Run r = amn(INSTALLED, "convert", input().toString(), "--to", "npz");
        assertThat(r.code()).isEqualTo(6);
        assertThat(r.err()).contains("no installed writer for npz (its module reads it, but writes nothing)",
                "writers: safetensors, gguf").doesNotContain("add io.anamnesis");
    }


    @Test
    void aBrokenZipSaysWhatIsWrongWithoutJavaClassNames() throws IOException {
        byte[] zip = new byte[64];
        zip[0] = 'P';
        zip[1] = 'K';
        zip[2] = 3;
        zip[3] = 4;
        Path f = Files.write(dir.resolve("broken.npz"), zip);
        Runs.Run r = amn(INSTALLED, "inspect", f.toString());
        assertThat(r.code()).isEqualTo(3);
        assertThat(r.err()).contains("broken.npz").doesNotContain("Impl", "sun.nio", "java.");
    }
}
