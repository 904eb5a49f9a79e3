package io.anamnesis.cli;

import org.junit.jupiter.api.Test;

import java.io.PrintWriter;
import java.io.StringWriter;

import static io.anamnesis.cli.Runs.amn;
import static org.assertj.core.api.Assertions.assertThat;

/** What amn says when the command line itself is wrong, or the JVM gives out (issue 8, item 7). */
class MessagesTest {
    @Test
    void bareAmnSaysWhatIsMissingAndWhereHelpIsOnce() {
        Runs.Run r = amn(Fakes.amn());
        assertThat(r.code()).isEqualTo(Amn.USAGE);
        assertThat(r.err().lines().toList()).containsExactly(
                "amn: missing command: parse, inspect, remember, convert, forget, diff, formats or completion (see 'amn --help')");
    }

    @Test
    void anUnknownCommandIsCalledOneAndTheCommandsAreListed() {
        Runs.Run r = amn(Fakes.amn(), "frobnicate", "x");
        assertThat(r.code()).isEqualTo(Amn.USAGE);
        assertThat(r.err()).startsWith("amn: unknown command 'frobnicate' (commands: parse, inspect, remember, convert,"
                + " forget, diff, formats, completion)").doesNotContain("Unmatched", "aot-train", " man");
    }

    @Test
    void anUnknownOptionStaysPicocliSWordsWithTheCommandsHelp() {
        Runs.Run r = amn(Fakes.amn(), "parse", "--frobnicate", "x");
        assertThat(r.code()).isEqualTo(Amn.USAGE);
        assertThat(r.err()).contains("--frobnicate", "(see 'amn parse --help')");
    }

    @Test
    void outOfMemoryNamesTheLaunchersVariable() {
        StringWriter err = new StringWriter();
        int code = Amn.failure(new OutOfMemoryError("Java heap space"), new PrintWriter(err), false);
        assertThat(code).isEqualTo(Amn.INTERNAL);
        assertThat(err.toString()).contains("AMN_JAVA_OPTS=-Xmx").doesNotContain(" JAVA_OPTS");
    }
}
