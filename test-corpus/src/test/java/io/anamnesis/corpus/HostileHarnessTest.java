package io.anamnesis.corpus;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.spi.FileProbe;
import io.anamnesis.api.spi.FormatReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The hostile-input harness must itself be able to fail: a reader that misbehaves in each
 * way the promise forbids is caught, and one that keeps the promise is not.
 */
class HostileHarnessTest {
    @TempDir
    Path dir;

    /** Does what the file says: a typed error, an untyped one, a hang, a heap hog, a giant output, or a clean file. */
    static final class MisbehavingReader implements FormatReader {
        @Override
        public String format() {
            return "misbehaving";
        }

        @Override
        public List<String> fileExtensions() {
            return List.of("bad");
        }

        @Override
        public String description() {
            return "test double";
        }

        @Override
        public boolean canRead(FileProbe probe) {
            return true;
        }

        @Override
        public TensorArchive open(Path path, ParseLimits limits) {
            String what;
            try {
                what = Files.readString(path, StandardCharsets.US_ASCII).strip();
            } catch (IOException e) {
                throw new AssertionError(e);
            }
            switch (what) {
                case "typed" -> throw new MalformedFileException("bad magic");
                case "npe" -> throw new NullPointerException("header field");
                case "index" -> throw new ArrayIndexOutOfBoundsException(7);
                case "hang" -> {
                    while (!Thread.currentThread().isInterrupted()) Thread.onSpinWait();
                    throw new MalformedFileException("interrupted");
                }
                case "heap" -> {
                    List<byte[]> hog = new ArrayList<>();
                    for (int i = 0; i < 80; i++) hog.add(new byte[4 << 20]);
                    if (hog.size() == 80) throw new MalformedFileException("too big after all");
                }
                default -> {
                }
            }
            long[] shape = what.equals("giant") ? new long[]{1L << 20, 1L << 20} : new long[]{2};
            return new OneTensorArchive(path, TensorEntry.of("t", DType.F32, Shape.of(shape)));
        }
    }

    record OneTensorArchive(Path file, TensorEntry entry) implements TensorArchive {
        @Override
        public String format() {
            return "misbehaving";
        }

        @Override
        public Optional<Path> path() {
            return Optional.of(file);
        }

        @Override
        public Map<String, String> metadata() {
            return Map.of();
        }

        @Override
        public Map<String, String> properties() {
            return Map.of();
        }

        @Override
        public List<TensorEntry> tensors() {
            return List.of(entry);
        }

        @Override
        public MemorySegment data(TensorEntry e, Arena arena) {
            return arena.allocate(e.byteSize());
        }

        @Override
        public void close() {
        }
    }

    private HostileInputTest.Outcome run(String behaviour) throws IOException {
        return run(behaviour, HostileInputTest.TIMEOUT);
    }

    private HostileInputTest.Outcome run(String behaviour, Duration timeout) throws IOException {
        Path file = Files.writeString(dir.resolve(behaviour + ".bad"), behaviour);
        Anamnesis amn = Anamnesis.of(List.of(new MisbehavingReader()), List.of(), List.of());
        return HostileInputTest.runPreemptively(amn, timeout, behaviour, file);
    }

    @Test
    void acceptsSuccessAndTypedErrors() throws IOException {
        assertThat(run("clean")).extracting(HostileInputTest.Outcome::kind, HostileInputTest.Outcome::violation).containsExactly("ok", null);
        assertThat(run("typed")).extracting(HostileInputTest.Outcome::kind, HostileInputTest.Outcome::violation).containsExactly("parse", null);
    }

    @Test
    void reportsUntypedExceptionsWithTheirStackTrace() throws IOException {
        HostileInputTest.Outcome npe = run("npe");
        assertThat(npe.kind()).isEqualTo("NullPointerException");
        assertThat(npe.violation()).contains("header field").contains("MisbehavingReader.open");
        assertThat(run("index").kind()).isEqualTo("ArrayIndexOutOfBoundsException");
    }

    @Test
    void reportsAnInternalErrorOfTheCommandLine() throws IOException {
        Anamnesis amn = Anamnesis.of(List.of(new MisbehavingReader()), List.of(), List.of());
        Path npe = Files.writeString(dir.resolve("npe.bad"), "npe");
        HostileInputTest.Outcome cli = HostileInputTest.runCli(amn, HostileInputTest.TIMEOUT, "npe", npe, "inspect");
        assertThat(cli.kind()).isEqualTo("cli-exit-1");
        assertThat(cli.violation()).contains("internal error").contains("NullPointerException");
        Path typed = Files.writeString(dir.resolve("typed.bad"), "typed");
        assertThat(HostileInputTest.runCli(amn, HostileInputTest.TIMEOUT, "typed", typed, "parse", "--json"))
                .extracting(HostileInputTest.Outcome::kind, HostileInputTest.Outcome::violation).containsExactly("cli-3", null);
    }

    @Test
    void reportsAHang() throws IOException {
        HostileInputTest.Outcome hang = run("hang", Duration.ofMillis(500));
        assertThat(hang.kind()).isEqualTo("timeout");
        assertThat(hang.violation()).contains("500 ms");
    }

    @Test
    void reportsAHeapHogEvenWhenItEndsInATypedError() throws IOException {
        HostileInputTest.Outcome heap = run("heap");
        assertThat(heap.kind()).isEqualTo("heap");
        assertThat(heap.violation()).contains("MiB of heap").contains("ended with parse");
    }

    @Test
    void reportsAnOutputOutOfProportionToTheFileWithoutAllocatingIt() throws IOException {
        HostileInputTest.Outcome giant = run("giant");
        assertThat(giant.kind()).isEqualTo("oversized");
        assertThat(giant.violation()).contains("'t'").contains("4398046511104 bytes");
    }

    @Test
    void mutantsAreTheSameOnEveryRunAndHaveDistinctIds() {
        byte[] gguf = SeedFiles.gguf();
        List<Mutations.Mutant> a = Mutations.of("built/model.gguf", gguf, 200);
        List<Mutations.Mutant> b = Mutations.of("built/model.gguf", gguf, 200);
        assertThat(a).hasSize(200);
        assertThat(a.stream().map(Mutations.Mutant::id).toList()).isEqualTo(b.stream().map(Mutations.Mutant::id).toList());
        assertThat(new HashSet<>(a.stream().map(Mutations.Mutant::id).toList())).hasSize(a.size());
        for (int i = 0; i < a.size(); i++) {
            assertThat(a.get(i).make().apply(gguf)).as(a.get(i).id()).isEqualTo(b.get(i).make().apply(gguf));
        }
        // the GGUF walk found the fields the hostile values go into
        assertThat(a.stream().map(Mutations.Mutant::id)).anyMatch(id -> id.contains("(gguf.kv_count)"))
                .anyMatch(id -> id.contains("gguf.array.len[tokenizer.ggml.tokens]"))
                .anyMatch(id -> id.startsWith("gguf.type@"));
    }

    @Test
    void hostileLengthLandsExactlyOnTheField() {
        byte[] st = SeedFiles.plainSafetensors();
        Mutations.Mutant m = Mutations.of("x", st, 10_000).stream()
                .filter(x -> x.id().equals("u64@0=2^63-1(st.header_len)")).findFirst().orElseThrow();
        byte[] out = m.make().apply(st);
        assertThat(FileAnatomy.le(out, 0, 8)).isEqualTo(Long.MAX_VALUE);
        assertThat(Arrays.copyOfRange(out, 8, out.length)).isEqualTo(Arrays.copyOfRange(st, 8, st.length));
    }

    @Test
    void semanticMutantsStayValidSafetensors() throws IOException {
        byte[] fp8 = SeedFiles.fp8Safetensors();
        List<Mutations.Mutant> all = SemanticMutations.of(fp8);
        Mutations.Mutant reshaped = all.stream().filter(x -> x.id().equals("st.reshape(down_proj.weight)=[8, 4]"))
                .findFirst().orElseThrow();
        SemanticMutations.Model m = SemanticMutations.parse(reshaped.make().apply(fp8));
        assertThat(m.tensors().getFirst().shape()).containsExactly(8, 4);
        assertThat(m.tensors().getFirst().bytes()).hasSize(32);
        assertThat(all.stream().map(Mutations.Mutant::id)).contains("st.drop(down_proj.weight_scale)");
    }
}
