package io.anamnesis.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * FastPath's option table is picocli's model of the same commands (issue 9, item 5): derived
 * here from the annotations, so an option added on one side and not the other fails.
 */
class FastPathTest {
    /** Help and version are picocli's to print; FastPath leaves them to it. */
    static final Set<String> PICOCLI_ONLY = Set.of("-h", "--help", "-V", "--version");

    @Test
    void fastPathTakesExactlyTheOptionsPicocliDeclares() {
        CommandLine cl = new CommandLine(new Amn(new Amn.Context(Fakes::amn,
                new java.io.PrintWriter(java.io.Writer.nullWriter()), new java.io.PrintWriter(java.io.Writer.nullWriter()),
                Map.of(), java.nio.file.Path.of("."), false)));
        Map<String, Set<String>> picocli = new TreeMap<>();
        Set<String> takeAValue = new TreeSet<>();
        cl.getSubcommands().forEach((name, sub) -> {
            if (name.equals("help")) return;
            Set<String> names = new TreeSet<>();
            for (CommandLine.Model.OptionSpec o : sub.getCommandSpec().options()) {
                for (String n : o.names()) {
                    if (PICOCLI_ONLY.contains(n)) continue;
                    names.add(n);
                    if (o.arity().max() > 0 && !o.typeInfo().isBoolean()) takeAValue.add(n);
                }
            }
            picocli.put(name, names);
        });
        // every command is on the fast path or declared as picocli-only, never neither
        Set<String> slow = new TreeSet<>(picocli.keySet());
        slow.removeAll(FastPath.OPTIONS.keySet());
        assertThat(slow).isEqualTo(new TreeSet<>(FastPath.PICOCLI_ONLY_COMMANDS));
        picocli.keySet().removeAll(FastPath.PICOCLI_ONLY_COMMANDS);
        takeAValue.clear();
        cl.getSubcommands().forEach((name, sub) -> {
            if (name.equals("help") || FastPath.PICOCLI_ONLY_COMMANDS.contains(name)) return;
            for (CommandLine.Model.OptionSpec o : sub.getCommandSpec().options()) {
                for (String n : o.names()) {
                    if (!PICOCLI_ONLY.contains(n) && o.arity().max() > 0 && !o.typeInfo().isBoolean()) takeAValue.add(n);
                }
            }
        });
        Map<String, Set<String>> fast = new TreeMap<>();
        FastPath.OPTIONS.forEach((k, v) -> fast.put(k, new TreeSet<>(v)));
        assertThat(fast).isEqualTo(picocli);
        assertThat(new TreeSet<>(FastPath.TAKE_A_VALUE)).isEqualTo(takeAValue);
    }
}
