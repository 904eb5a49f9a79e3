/**
 * {@code amn}, the command line: see inside tensor files, recover precision, convert and
 * quantize. It depends on the api alone: every format and quant module, and every plugin jar
 * in the image's {@code plugins} folder or {@code AMN_PLUGINS}, is found at run time with
 * {@link java.util.ServiceLoader}.
 *
 * <p><b>Add it for</b>: running {@code amn} from Java ({@link io.anamnesis.cli.Amn#execute});
 * most users take the release archive, a runtime image that needs no Java installed.
 */
module io.anamnesis.cli {
    requires io.anamnesis.api;
    requires info.picocli;
    requires com.fasterxml.jackson.core;
    requires org.slf4j;
    // remote inputs (parse and inspect of https:// and hf:// URLs): HTTP range requests
    requires java.net.http;

    // picocli reads the command classes' annotations and sets their fields reflectively.
    opens io.anamnesis.cli to info.picocli;

    exports io.anamnesis.cli;
}
