package io.anamnesis.release;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Issue 15, items 4 and 5: amn-<version>-<platform>.tar.gz unpacked in a temp folder runs
 * with no Java on the PATH, says its version and its modules', recovers the sample, and holds
 * what a person installs: the man page, the completion script, the plugins folder, the
 * licences (every bundled library named in the notices). On a terminal it colours its help,
 * and NO_COLOR turns that off.
 */
class ReleaseArchiveTest {
    @TempDir
    Path dir;

    @Test
    void theArchiveRunsWithoutJavaAndHoldsWhatAPersonInstalls() throws Exception {
        Path archive = Release.archive();
        assertThat(archive.getFileName().toString()).startsWith("amn-" + Release.version() + "-").endsWith(".tar.gz");
        Path home = Release.unpack(Files.createDirectories(dir.resolve("unpacked")));
        assertThat(home.getFileName().toString()).isEqualTo("amn-" + Release.version());
        Path amn = home.resolve("bin/amn");
        Map<String, String> env = Map.of("PATH", Release.pathWithoutJava(dir).toString());

        Release.Run version = Release.run(dir, env, List.of(amn.toString(), "--version"), 120);
        assertThat(version.code()).as(version.output()).isZero();
        assertThat(version.output()).startsWith("amn " + Release.version() + "\n").contains("Java ", "Modules:");
        for (String module : List.of("api", "cli", "format.safetensors", "format.gguf", "format.npz", "format.pth",
                "quant.fp8", "quant.gptq", "quant.awq", "quant.bnb", "quant.gguf", "quant.compressed.tensors", "quant.mxfp4")) {
            assertThat(version.output()).containsPattern("(?m)^  io\\.anamnesis\\." + module.replace(".", "\\.") + " +"
                    + java.util.regex.Pattern.quote(Release.version()) + "$");
        }

        Path out = dir.resolve("tiny-bf16.safetensors");
        Release.Run remember = Release.run(dir, env, List.of(amn.toString(), "remember",
                Release.repository().resolve("samples/tiny-fp8.safetensors").toString(), "-o", out.toString()), 300);
        assertThat(remember.code()).as(remember.output()).isZero();
        Map<String, Safetensors.Tensor> recovered = Safetensors.read(out);
        assertThat(recovered.get("model.layers.0.mlp.down_proj.weight").dtype()).isEqualTo("BF16");
        assertThat(recovered).doesNotContainKey("model.layers.0.mlp.down_proj.weight_scale_inv");

        // what a person installs
        assertThat(home.resolve("LICENSE")).content().contains("Apache License", "Version 2.0");
        assertThat(home.resolve("plugins/README.txt")).isRegularFile();
        Release.Run completion = Release.run(dir, env, List.of(amn.toString(), "completion", "bash"), 120);
        assertThat(completion.code()).isZero();
        assertThat(home.resolve("share/bash-completion/completions/amn")).content().isEqualTo(completion.output());
        Release.Run man = Release.run(dir, env, List.of(amn.toString(), "man"), 120);
        assertThat(home.resolve("share/man/man1/amn.1")).content().isEqualTo(man.output()).startsWith(".TH AMN 1");

        // every library the image bundles is named in the notices
        String notices = Files.readString(home.resolve("THIRD-PARTY-NOTICES.txt"));
        Release.Run modules = Release.run(dir, env, List.of(home.resolve("bin/java").toString(), "--list-modules"), 120);
        List<String> bundled = new ArrayList<>();
        for (String line : modules.output().split("\n")) {
            String name = line.split("@")[0].strip();
            if (name.isEmpty() || name.startsWith("java.") || name.startsWith("jdk.") || name.startsWith("io.anamnesis.")) continue;
            bundled.add(name);
        }
        assertThat(bundled).contains("info.picocli", "com.fasterxml.jackson.core");
        for (String name : bundled) assertThat(notices).as("notices name " + name).contains(name);
    }

    @Test
    void helpIsColouredOnATerminalAndPlainWithNoColor() throws Exception {
        assumeTrue(new File("/usr/bin/script").canExecute(), "script (util-linux) gives amn a terminal");
        Path home = Release.unpack(Files.createDirectories(dir.resolve("unpacked")));
        Path amn = home.resolve("bin/amn");
        Map<String, String> env = new HashMap<>(Map.of("PATH", Release.pathWithoutJava(dir) + ":/usr/bin:/bin", "TERM", "xterm"));
        Path typescript = dir.resolve("typescript");
        Release.Run coloured = Release.run(dir, env, List.of("/usr/bin/script", "-q", "-e", "-c", amn + " --help", typescript.toString()), 120);
        assertThat(coloured.code()).as(coloured.output()).isZero();
        assertThat(Files.readString(typescript)).contains("\u001b[").contains("Usage:");

        env.put("NO_COLOR", "1");
        Release.Run plain = Release.run(dir, env, List.of("/usr/bin/script", "-q", "-e", "-c", amn + " --help", typescript.toString()), 120);
        assertThat(plain.code()).as(plain.output()).isZero();
        assertThat(Files.readString(typescript)).doesNotContain("\u001b[").contains("Usage:");

        // a pipe: plain without being asked
        Release.Run piped = Release.run(dir, Map.of("PATH", Release.pathWithoutJava(dir.resolve("p")).toString()),
                List.of(amn.toString(), "--help"), 120);
        assertThat(piped.output()).doesNotContain("\u001b").contains("Usage:");
    }
}
