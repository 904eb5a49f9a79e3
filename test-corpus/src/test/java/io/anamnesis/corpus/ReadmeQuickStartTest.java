package io.anamnesis.corpus;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.ToolProvider;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The README's library quick start, taken from README.md (so the two cannot drift), compiles
 * as written against the modules and runs on the bundled sample (issue 8, item 11); without
 * jackson-core on the class path it fails with a typed error that names the jar, not a
 * NoClassDefFoundError.
 */
class ReadmeQuickStartTest {
    @TempDir
    Path dir;

    static final Path REPO = Path.of("..").toAbsolutePath().normalize();

    /** The first ```java block after "## Library quick start". */
    static String snippet() throws IOException {
        String readme = Files.readString(REPO.resolve("README.md"));
        int section = readme.indexOf("## Library quick start");
        assertThat(section).as("README has a library quick start").isNotNegative();
        int start = readme.indexOf("```java\n", section) + "```java\n".length();
        int end = readme.indexOf("```", start);
        return readme.substring(start, end);
    }

    Path compile() throws IOException {
        Path src = Files.createDirectories(dir.resolve("src"));
        Path out = Files.createDirectories(dir.resolve("classes"));
        Path file = Files.writeString(src.resolve("QuickStart.java"), snippet());
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        try (var files = javac.getStandardFileManager(diagnostics, null, null)) {
            boolean ok = javac.getTask(null, files, diagnostics,
                    List.of("-d", out.toString(), "-cp", System.getProperty("java.class.path"), "-Xlint:none"),
                    null, files.getJavaFileObjects(file)).call();
            assertThat(ok).as(diagnostics.getDiagnostics().toString()).isTrue();
        }
        return out;
    }

    record Result(int code, String output) {
    }

    Result run(Path classes, String classPath, String... args) throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        List<String> command = new java.util.ArrayList<>(List.of(java.toString(), "-cp",
                classes + File.pathSeparator + classPath, "QuickStart"));
        command.addAll(Arrays.asList(args));
        Path log = dir.resolve("run.log");
        Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) { // a hang guard for the child
            p.destroyForcibly();
            throw new AssertionError("QuickStart did not finish");
        }
        return new Result(p.exitValue(), Files.readString(log));
    }

    @Test
    void theQuickStartCompilesAsWrittenAndRecoversTheSample() throws Exception {
        Path classes = compile();
        Path out = dir.resolve("out.safetensors");
        Result r = run(classes, System.getProperty("java.class.path"),
                REPO.resolve("samples/tiny-fp8.safetensors").toString(), out.toString());
        assertThat(r.code()).as(r.output()).isZero();
        assertThat(r.output()).contains("model.layers.0.mlp.down_proj.weight F8_E4M3[256, 384]", "first value: ");
        assertThat(out).isRegularFile();
    }

    @Test
    void withoutJacksonCoreTheFailureIsTypedAndNamesTheJar() throws Exception {
        Path classes = compile();
        String withoutJackson = Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(e -> !Path.of(e).getFileName().toString().startsWith("jackson-core"))
                .collect(Collectors.joining(File.pathSeparator));
        Result r = run(classes, withoutJackson, REPO.resolve("samples/tiny-fp8.safetensors").toString(),
                dir.resolve("out.safetensors").toString());
        assertThat(r.code()).isNotZero();
        assertThat(r.output()).contains("io.anamnesis.api.UnsupportedFeatureException",
                "needs a library that is not installed: add com.fasterxml.jackson.core:jackson-core")
                .doesNotContain("Exception in thread \"main\" java.lang.NoClassDefFoundError");
    }
}
