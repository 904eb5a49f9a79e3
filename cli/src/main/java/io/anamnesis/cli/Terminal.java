package io.anamnesis.cli;

import java.io.Console;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Whether amn's standard output and standard error are terminals, and whether it may colour
 * them. Colour (help, the {@code amn:} prefix of errors and warnings) and the progress bar
 * are for a person at a terminal; a pipe, a file or a log gets plain text, and so does a
 * terminal when {@code NO_COLOR} is set to anything but the empty string (no-color.org) or
 * {@code TERM} is {@code dumb}.
 *
 * @param out whether standard output is a terminal
 * @param err whether standard error is a terminal
 * @param env the environment the run was given
 */
record Terminal(boolean out, boolean err, Map<String, String> env) {
    private static final String BOLD_RED = "\u001b[1;31m";
    private static final String BOLD_YELLOW = "\u001b[1;33m";
    private static final String RESET = "\u001b[0m";

    Terminal {
        env = Map.copyOf(env);
    }

    /** What file descriptors 1 and 2 of this process are. */
    static Terminal ofProcess(Map<String, String> env) {
        return new Terminal(isTerminal(1), isTerminal(2), env);
    }

    /** Neither stream is a terminal: tests, and amn run from Java. */
    static Terminal none(Map<String, String> env) {
        return new Terminal(false, false, env);
    }

    /** Whether the user lets amn colour anything: {@code NO_COLOR} unset or empty, {@code TERM} not dumb. */
    boolean colourAllowed() {
        String noColor = env.get("NO_COLOR");
        return (noColor == null || noColor.isEmpty()) && !"dumb".equals(env.get("TERM"));
    }

    /** Help and other standard-output text may carry colour. */
    boolean colourOut() {
        return out && colourAllowed();
    }

    /** Error and warning lines on standard error may carry colour. */
    boolean colourErr() {
        return err && colourAllowed();
    }

    /** {@code amn: } before an error, bold red on a terminal that takes colour. */
    String errorPrefix() {
        return colourErr() ? BOLD_RED + "amn:" + RESET + " " : "amn: ";
    }

    /** {@code amn: warning: } before a warning, bold yellow on a terminal that takes colour. */
    String warningPrefix() {
        return colourErr() ? BOLD_YELLOW + "amn: warning:" + RESET + " " : "amn: warning: ";
    }

    /**
     * Whether file descriptor {@code fd} is a terminal. {@code Console.isTerminal()} answers
     * for standard input and output together, so {@code amn remember ... > log} would show
     * no progress on the terminal it could draw on; Linux names each descriptor's file in
     * /proc/self/fd, and elsewhere the console's answer is the best there is.
     */
    static boolean isTerminal(int fd) {
        try {
            return isTerminalDevice(Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).toString());
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            Console console = System.console();
            return console != null && console.isTerminal();
        }
    }

    /** A pseudo-terminal or a console: {@code /dev/pts/N}, {@code /dev/ttyN}, {@code /dev/tty}. */
    static boolean isTerminalDevice(String file) {
        return file.startsWith("/dev/pts/") || file.startsWith("/dev/tty") || file.equals("/dev/console");
    }
}
