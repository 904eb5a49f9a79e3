package io.anamnesis.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The progress bar decides by the stream it draws on, standard error (issue 8, item 8). */
class ProgressBarTest {
    @TempDir
    Path dir;

    /** Prints, on standard error, whether the bar would draw there. */
    public static final class Probe {
        public static void main(String[] args) {
            System.err.println("stderr-terminal=" + Terminal.isTerminal(2));
        }
    }

    @Test
    void terminalDevicesAreTerminalsAndPipesAndFilesAreNot() {
        assertThat(Terminal.isTerminalDevice("/dev/pts/3")).isTrue();
        assertThat(Terminal.isTerminalDevice("/dev/tty1")).isTrue();
        assertThat(Terminal.isTerminalDevice("pipe:[81234]")).isFalse();
        assertThat(Terminal.isTerminalDevice("/srv/logs/log.txt")).isFalse();
        assertThat(Terminal.isTerminalDevice("/dev/null")).isFalse();
    }

    @Test
    void standardErrorOfATestForkIsNoTerminal() {
        // surefire gives the fork pipes
        assertThat(Terminal.isTerminal(2)).isFalse();
    }

    /**
     * {@code amn remember ... > log} on a terminal: standard output is a file, standard error
     * the terminal, so the bar draws. Run under {@code script}, which gives the command a
     * pseudo-terminal, with standard output redirected to a file.
     */
    @Test
    @Timeout(120) // a hang guard for the child process
    void standardOutputRedirectedToAFileStillDrawsOnATerminal() throws Exception {
        assumeTrue(new File("/usr/bin/script").canExecute(), "script (util-linux) gives a child a terminal");
        String cp = System.getProperty("java.class.path") + File.pathSeparator + System.getProperty("jdk.module.path", "");
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Path out = dir.resolve("stdout.txt");
        Path typescript = dir.resolve("typescript.txt");
        String command = "'" + java + "' -cp '" + cp + "' '" + Probe.class.getName() + "' > '" + out + "'";
        Process p = new ProcessBuilder(List.of("/usr/bin/script", "-q", "-e", "-c", command, typescript.toString()))
                .redirectErrorStream(true).redirectOutput(dir.resolve("script.log").toFile()).start();
        assertThat(p.waitFor()).as(Files.readString(dir.resolve("script.log"))).isZero();
        assertThat(Files.readString(typescript)).contains("stderr-terminal=true");
        assertThat(Files.readString(out)).isEmpty();
    }
}
