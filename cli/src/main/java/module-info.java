/**
 * amn, the command line. Depends on the api alone: every format and quant module is found
 * at run time with ServiceLoader through {@code Anamnesis.installed()}.
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
