/** amn, the command line. Finds every format and quant module at run time with ServiceLoader. */
module io.anamnesis.cli {
    requires io.anamnesis.api;
    requires info.picocli;
    requires com.fasterxml.jackson.databind;
    requires org.slf4j;

    // opens io.anamnesis.cli to info.picocli arrives with the commands.
}
