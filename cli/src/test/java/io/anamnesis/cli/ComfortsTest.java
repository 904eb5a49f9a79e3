package io.anamnesis.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.File;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Issue 15, item 4: completion and the man page come from picocli's model (so every visible
 * command and option is in both, and nothing hidden is), {@code --version} names the
 * installed modules, and colour follows {@link Terminal}: a terminal that takes it, never a
 * pipe, a file or {@code NO_COLOR}.
 */
class ComfortsTest {
    @TempDir
    Path dir;

    record Out(int code, String out, String err) {
    }

    static Out run(Terminal terminal, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Amn.execute(Fakes::amn, new PrintWriter(out), new PrintWriter(err), terminal.env(), Path.of("."),
                terminal, true, args);
        return new Out(code, out.toString(), err.toString());
    }

    static Out run(String... args) {
        return run(Terminal.none(Map.of()), args);
    }

    /** Every visible command with its visible option names, from the same model amn runs with. */
    static Map<String, List<String>> visibleCommands() {
        CommandLine cl = new CommandLine(new Amn(new Amn.Context(Fakes::amn, new PrintWriter(Writer.NULL),
                new PrintWriter(Writer.NULL), Map.of(), Path.of("."), false)));
        Map<String, List<String>> out = new java.util.TreeMap<>();
        cl.getSubcommands().forEach((name, sub) -> {
            var spec = sub.getCommandSpec();
            if (spec.usageMessage().hidden() || !name.equals(spec.name()) || name.equals("help")) return;
            List<String> names = new ArrayList<>();
            for (var o : spec.options()) if (!o.hidden()) names.addAll(List.of(o.names()));
            out.put(name, names);
        });
        return out;
    }

    static final class Writer {
        static final java.io.Writer NULL = java.io.Writer.nullWriter();
    }

    @Test
    void theCompletionScriptCompletesEveryVisibleCommandAndOptionAndIsValidBash() throws Exception {
        Out r = run("completion", "bash");
        assertThat(r.code()).as(r.err()).isZero();
        Map<String, List<String>> commands = visibleCommands();
        assertThat(commands).containsKeys("parse", "inspect", "remember", "convert", "forget", "formats", "completion");
        for (var e : commands.entrySet()) {
            assertThat(r.out()).as("command " + e.getKey()).contains(e.getKey());
            for (String option : e.getValue()) assertThat(r.out()).as(e.getKey() + " " + option).contains(option);
        }
        assertThat(r.out()).doesNotContain("aot-train").contains("ZSH_VERSION", "bashcompinit");
        assertThat(run("completion", "zsh").out()).isEqualTo(r.out());
        assertThat(run("completion").out()).isEqualTo(r.out());
        assertThat(run("completion", "fish").code()).isEqualTo(2);

        assumeTrue(new File("/bin/bash").canExecute(), "bash checks the script's syntax");
        Path script = Files.writeString(dir.resolve("amn.bash"), r.out());
        Process p = new ProcessBuilder("/bin/bash", "-n", script.toString()).redirectErrorStream(true).start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(new String(p.getInputStream().readAllBytes())).isZero();
    }

    @Test
    void theManPageListsEveryVisibleCommandAndOptionAndRendersWithoutWarnings() throws Exception {
        Out r = run("man");
        assertThat(r.code()).as(r.err()).isZero();
        String page = r.out();
        assertThat(page).startsWith(".TH AMN 1").contains(".SH NAME", ".SH SYNOPSIS", ".SH COMMANDS",
                ".SH \"EXIT CODES\"", ".SH \"ENVIRONMENT\"", "AMN_PLUGINS", "NO_COLOR");
        for (var e : visibleCommands().entrySet()) {
            assertThat(page).contains(".SS \"amn " + e.getKey() + "\"");
            for (String option : e.getValue()) assertThat(page).contains("\\fB" + ManPage.escape(option) + "\\fR");
        }
        assertThat(page).doesNotContain("aot\\-train");
        // no line may start a roff request by accident
        for (String line : page.split("\n")) {
            if (line.startsWith(".") || line.startsWith("'")) assertThat(line).matches("^\\.(TH|SH|SS|PP|TP|B|nf|fi) ?.*");
        }

        assumeTrue(new File("/usr/bin/groff").canExecute(), "groff renders the page");
        Path file = Files.writeString(dir.resolve("amn.1"), page);
        Process p = new ProcessBuilder("/usr/bin/groff", "-man", "-Tutf8", "-ww", "-z", file.toString())
                .redirectErrorStream(true).start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String warnings = new String(p.getInputStream().readAllBytes());
        assertThat(p.exitValue()).isZero();
        assertThat(warnings).isEmpty();
    }

    @Test
    void versionNamesAmnTheRuntimeAndEachModuleWithItsVersion() {
        Out r = run("--version");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).startsWith("amn ").contains("Java " + Runtime.version(), "Modules:");
        if (!Amn.class.getModule().isNamed()) {
            // these tests run on the class path; the image's modules are test-release's to check
            assertThat(r.out()).contains("  unnamed (class path)");
            return;
        }
        String version = System.getProperty("amn.version");
        assertThat(r.out()).startsWith("amn " + version + System.lineSeparator())
                .containsPattern("(?m)^  io\\.anamnesis\\.api +" + java.util.regex.Pattern.quote(version) + "$")
                .containsPattern("(?m)^  io\\.anamnesis\\.cli +" + java.util.regex.Pattern.quote(version) + "$");
    }

    @Test
    void colourOnlyOnATerminalThatTakesIt() {
        Terminal tty = new Terminal(true, true, Map.of());
        assertThat(run(tty, "--help").out()).contains("\u001b[");
        assertThat(run(tty, "inspect", "--help").out()).contains("\u001b[");
        Out usage = run(tty, "inspect", "--to", "q8", "x");
        assertThat(usage.code()).isEqualTo(2);
        assertThat(usage.err()).startsWith("\u001b[1;31mamn:\u001b[0m ");

        for (Terminal plain : List.of(
                new Terminal(false, false, Map.of()),                          // a pipe or a file
                new Terminal(true, true, Map.of("NO_COLOR", "1")),              // no-color.org
                new Terminal(true, true, Map.of("TERM", "dumb")))) {
            assertThat(run(plain, "--help").out()).as(plain.toString()).doesNotContain("\u001b");
            Out err = run(plain, "inspect", "--to", "q8", "x");
            assertThat(err.err()).as(plain.toString()).startsWith("amn: ").doesNotContain("\u001b");
        }
        // NO_COLOR set but empty does not count (no-color.org); a terminal stdout alone colours help only
        assertThat(new Terminal(true, true, Map.of("NO_COLOR", "")).colourOut()).isTrue();
        Terminal outOnly = new Terminal(true, false, Map.of());
        assertThat(outOnly.colourOut()).isTrue();
        assertThat(outOnly.errorPrefix()).isEqualTo("amn: ");
    }
}
