package io.anamnesis.cli;

import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Model.PositionalParamSpec;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * amn(1) in roff ({@code man 7 man}), made from picocli's model of the commands: the root's
 * header, description and options, then each visible command with its synopsis, description,
 * parameters and options, then the root's footer, whose headed blocks (exit codes, the
 * environment) become sections. Nothing is written twice, so the page cannot drift from
 * {@code --help}.
 */
final class ManPage {
    private ManPage() {
    }

    static String render(CommandSpec root) {
        StringBuilder m = new StringBuilder();
        String version = root.version().length > 0 ? root.version()[0] : root.name();
        m.append(".TH ").append(root.name().toUpperCase(Locale.ROOT)).append(" 1 \"\" \"")
                .append(escape(version)).append("\" \"User Commands\"\n");
        m.append(".SH NAME\n").append(root.name()).append(" \\- ").append(escape(lower(first(root.usageMessage().header())))).append('\n');
        m.append(".SH SYNOPSIS\n.B ").append(root.name()).append("\n[\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGUMENTS\\fR]\n");
        m.append(".SH DESCRIPTION\n");
        paragraphs(m, root.usageMessage().description());
        m.append(".SH OPTIONS\n");
        options(m, root);
        m.append(".SH COMMANDS\n");
        for (CommandLine sub : visibleSubcommands(root)) {
            CommandSpec s = sub.getCommandSpec();
            m.append(".SS \"").append(escape(root.name() + " " + s.name())).append("\"\n");
            String synopsis = new CommandLine.Help(s, CommandLine.Help.defaultColorScheme(CommandLine.Help.Ansi.OFF))
                    .synopsis(0).strip();
            m.append(".nf\n").append(escapeLines(synopsis)).append("\n.fi\n");
            if (s.aliases().length > 0) m.append(".PP\nAlso: ").append(escape(String.join(", ", s.aliases()))).append(".\n");
            paragraphs(m, s.usageMessage().header());
            paragraphs(m, s.usageMessage().description());
            for (PositionalParamSpec p : s.positionalParameters()) {
                if (p.hidden()) continue;
                m.append(".TP\n\\fI").append(escape(p.paramLabel())).append("\\fR\n")
                        .append(escape(describe(p.description(), p.defaultValue()))).append('\n');
            }
            options(m, s);
        }
        footer(m, root);
        m.append(".SH FILES\n.TP\n\\fIplugins/\\fR\n")
                .append(escape("Beside bin and lib in the runtime image: plugin jars found at start-up, as those AMN_PLUGINS names."))
                .append("\n.TP\n\\fIshare/bash-completion/completions/amn\\fR\n")
                .append(escape("The completion script of 'amn completion bash', for bash and zsh."))
                .append('\n');
        return m.toString();
    }

    private static List<CommandLine> visibleSubcommands(CommandSpec spec) {
        List<CommandLine> out = new ArrayList<>();
        for (var e : spec.subcommands().entrySet()) {
            CommandSpec s = e.getValue().getCommandSpec();
            // each command once, under its own name (aliases map to the same CommandLine)
            if (s.usageMessage().hidden() || !e.getKey().equals(s.name()) || s.name().equals("help")) continue;
            out.add(e.getValue());
        }
        return out;
    }

    private static void options(StringBuilder m, CommandSpec spec) {
        for (OptionSpec o : spec.options()) {
            if (o.hidden()) continue;
            m.append(".TP\n");
            List<String> names = new ArrayList<>();
            for (String n : o.names()) names.add("\\fB" + escape(n) + "\\fR");
            m.append(String.join(", ", names));
            if (o.arity().max() > 0 && !o.typeInfo().isBoolean()) m.append(" \\fI").append(escape(o.paramLabel())).append("\\fR");
            m.append('\n').append(escape(describe(o.description(), o.defaultValue()))).append('\n');
        }
    }

    /** The footer's headed blocks (its heading, then any unindented line ending in ':') as sections. */
    private static void footer(StringBuilder m, CommandSpec root) {
        String heading = root.usageMessage().footerHeading().replace("%n", "").strip();
        boolean open = false;
        if (!heading.isEmpty()) {
            m.append(".SH \"").append(escape(section(heading))).append("\"\n.nf\n");
            open = true;
        }
        for (String line : root.usageMessage().footer()) {
            if (!line.isEmpty() && !line.startsWith(" ") && line.endsWith(":")) {
                if (open) m.append(".fi\n");
                m.append(".SH \"").append(escape(section(line))).append("\"\n.nf\n");
                open = true;
            } else if (open && !line.isBlank()) {
                m.append(escapeLines(line)).append('\n');
            }
        }
        if (open) m.append(".fi\n");
    }

    private static String section(String heading) {
        String h = heading.endsWith(":") ? heading.substring(0, heading.length() - 1) : heading;
        return h.toUpperCase(Locale.ROOT);
    }

    private static void paragraphs(StringBuilder m, String[] lines) {
        for (String line : lines) {
            if (line.isBlank()) continue;
            m.append(".PP\n").append(escape(line.replace("%n", " ").strip())).append('\n');
        }
    }

    private static String describe(String[] description, String defaultValue) {
        String text = String.join(" ", description).replace("%n", " ");
        return text.replace("${DEFAULT-VALUE}", defaultValue == null ? "" : defaultValue);
    }

    private static String first(String[] lines) {
        return lines.length == 0 ? "" : lines[0];
    }

    private static String lower(String s) {
        String t = s.endsWith(".") ? s.substring(0, s.length() - 1) : s;
        return t.isEmpty() ? t : Character.toLowerCase(t.charAt(0)) + t.substring(1);
    }

    private static String escapeLines(String text) {
        List<String> out = new ArrayList<>();
        for (String line : text.split("\\R")) out.add(escape(line));
        return String.join("\n", out);
    }

    /** Text safe in roff: backslashes and hyphens escaped, no line that starts a request. */
    static String escape(String text) {
        String t = text.replace("\\", "\\e").replace("-", "\\-").replace("…", "...");
        if (t.startsWith(".") || t.startsWith("'")) t = "\\&" + t;
        return t;
    }
}
