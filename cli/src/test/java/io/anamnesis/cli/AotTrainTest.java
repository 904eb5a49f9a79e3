package io.anamnesis.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static io.anamnesis.cli.Runs.amn;
import static org.assertj.core.api.Assertions.assertThat;

/** The build's hidden training runs: every sample of a folder, and nothing left behind. */
class AotTrainTest {
    @TempDir
    Path dir;

    @Test
    void trainsTheQuickCommandsOnEveryFileOfAFolderInNameOrder() throws IOException {
        Path samples = Files.createDirectory(dir.resolve("samples"));
        Path b = Fakes.write(samples, "b.fake", "ok");
        Path a = Fakes.write(samples, "a.fake", "ok");
        Files.createDirectory(samples.resolve("sub"));
        Runs.Run r = amn(Fakes.amn(), "aot-train", samples.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out().lines().filter(l -> l.startsWith("inspect " + a + " ->") || l.startsWith("inspect " + b + " ->")))
                .containsExactly("inspect " + a + " -> 0", "inspect " + b + " -> 0");
        assertThat(r.out()).contains("parse --json " + b + " -> 0", "inspect " + a + ".missing -> 7")
                .doesNotContain("sub");
    }

    @Test
    void recoverTrainingRemembersEachSampleAndDeletesWhatItWrote() throws IOException {
        Path samples = Files.createDirectory(dir.resolve("samples"));
        Path f = Fakes.write(samples, "model.fake", "ok");
        Runs.Run r = amn(Fakes.amn(), "aot-train-recover", samples.toString());
        assertThat(r.code()).as(r.err()).isZero();
        String line = r.out().lines().filter(l -> l.startsWith("remember ")).findFirst().orElseThrow();
        assertThat(line).startsWith("remember --quiet --to bf16 -o ").endsWith(" " + f + " -> 0");
        // on the scalar kernels (this test's JVM) remember alone: forget's profiles slowed remember
        assertThat(r.out().lines().filter(l -> l.startsWith("forget "))).isEmpty();
        Path written = Path.of(line.split(" ")[5]);
        assertThat(written).doesNotExist();
        assertThat(written.getParent()).doesNotExist();
        try (Stream<Path> s = Files.list(samples)) {
            assertThat(s).containsExactly(f);
        }
    }

    @Test
    void forgetTrainingForgetsTheRememberedSampleToEveryScalarTargetAndDeletesWhatItWrote() throws IOException {
        Path samples = Files.createDirectory(dir.resolve("samples"));
        Path f = Fakes.write(samples, "model.fake", "ok");
        Runs.Run r = amn(Fakes.amn(), "aot-train-forget", samples.toString());
        assertThat(r.code()).as(r.err()).isZero();
        java.util.List<String> lines = r.out().lines().toList();
        assertThat(lines.getFirst()).startsWith("remember --quiet --to bf16 -o ").endsWith(" " + f + " -> 0");
        String recovered = lines.getFirst().split(" ")[5];
        // then forget of what remember wrote, to each target the launcher runs on the scalar kernels
        assertThat(lines.subList(1, lines.size()))
                .extracting(l -> l.replaceFirst(" -o \\S+ ", " -o OUT ").replaceFirst(" -> \\d+$", ""))
                .containsExactly("forget --quiet --to nf4 -o OUT " + recovered,
                        "forget --quiet --to nf4 --double-quant -o OUT " + recovered,
                        "forget --quiet --to fp4 -o OUT " + recovered,
                        "forget --quiet --to int8 -o OUT " + recovered,
                        "forget --quiet --to fp8 --granularity channel -o OUT " + recovered,
                        "forget --quiet --to q8_0 -o OUT " + recovered);
        assertThat(Path.of(recovered).getParent()).doesNotExist();
        try (Stream<Path> s = Files.list(samples)) {
            assertThat(s).containsExactly(f);
        }
    }

    @Test
    void convertTrainingConvertsItsLlamaFolderToGgufThreeWaysAndDeletesWhatItWrote() throws IOException {
        Path samples = Files.createDirectory(dir.resolve("samples"));
        Path f = Fakes.write(samples, "model.fake", "ok");
        Runs.Run r = amn(io.anamnesis.api.Anamnesis.installed(), "aot-train-convert", samples.toString());
        assertThat(r.code()).as(r.err()).isZero();
        java.util.List<String> lines = r.out().lines().toList();
        // the installed modules convert the folder it writes (exit 0), the samples are not its input
        assertThat(lines).extracting(l -> l.replaceFirst(" -o \\S+ ", " -o OUT ").replaceFirst(" \\S+ -> ", " FOLDER -> "))
                .containsExactly("convert --quiet --to gguf --dtype q8_0 -o OUT FOLDER -> 0",
                        "convert --quiet --no-vocab --to gguf --dtype f16 -o OUT FOLDER -> 0",
                        "convert --quiet --no-vocab --to gguf --dtype bf16 -o OUT FOLDER -> 0");
        Path folder = Path.of(lines.getFirst().replaceFirst(" -> 0$", "").replaceFirst(".* ", ""));
        assertThat(folder.getParent()).doesNotExist();
        try (Stream<Path> s = Files.list(samples)) {
            assertThat(s).containsExactly(f);
        }
    }
}
