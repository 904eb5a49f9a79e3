package io.anamnesis.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Spec;

import java.util.concurrent.Callable;

/**
 * Hidden: {@code amn man} prints the manual page, amn(1), in roff, made from picocli's model
 * of the commands ({@link ManPage}). The build writes it into the image as
 * {@code share/man/man1/amn.1}; {@code man -l} reads it from anywhere.
 */
@Command(name = "man", hidden = true, header = "Print the manual page amn(1) in roff.")
final class ManCommand implements Callable<Integer> {
    @CommandLine.ParentCommand
    Amn parent;

    @Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        parent.context().out().print(ManPage.render(spec.root()));
        parent.context().out().flush();
        return Amn.OK;
    }
}
