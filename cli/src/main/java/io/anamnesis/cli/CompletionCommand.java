package io.anamnesis.cli;

import picocli.AutoComplete;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.util.concurrent.Callable;

/**
 * {@code amn completion [bash|zsh]}: the shell completion script, generated from picocli's
 * model of the commands, so it completes exactly the commands and options {@code --help}
 * lists. One script serves both shells: under zsh it loads zsh's bash-completion layer
 * ({@code bashcompinit}) first.
 */
@Command(name = "completion", sortOptions = false,
        header = "Print the shell completion script for bash or zsh.",
        description = {
                "bash:  source <(amn completion bash)    (in ~/.bashrc), or install the image's "
                        + "share/bash-completion/completions/amn",
                "zsh:   source <(amn completion zsh)     (in ~/.zshrc)"},
        mixinStandardHelpOptions = true,
        footerHeading = "%n", footer = "Exit codes: see 'amn --help'.")
final class CompletionCommand implements Callable<Integer> {
    @CommandLine.ParentCommand
    Amn parent;

    @Spec
    CommandLine.Model.CommandSpec spec;

    enum Shell { bash, zsh }

    @Parameters(index = "0", arity = "0..1", defaultValue = "bash", paramLabel = "<shell>",
            description = "bash (default) or zsh")
    Shell shell;

    @Override
    public Integer call() {
        parent.context().out().print(script(spec.root().commandLine()));
        parent.context().out().flush();
        return Amn.OK;
    }

    /** The script for the command line {@code root} describes. */
    static String script(CommandLine root) {
        return AutoComplete.bash("amn", root);
    }
}
