/**
 * The anamnesis api: what every format and quantization module implements, and the
 * {@link io.anamnesis.api.Anamnesis} entry point that finds them with {@link java.util.ServiceLoader}.
 * It depends on nothing but the JDK.
 */
module io.anamnesis.api {
    exports io.anamnesis.api;
    exports io.anamnesis.api.spi;
    exports io.anamnesis.api.numeric;
    exports io.anamnesis.api.write;
    exports io.anamnesis.api.config;
    exports io.anamnesis.api.json;
    exports io.anamnesis.api.model;

    uses io.anamnesis.api.spi.FormatReader;
    uses io.anamnesis.api.spi.FormatWriter;
    uses io.anamnesis.api.spi.Dequantizer;
    uses io.anamnesis.api.spi.Quantizer;
    uses io.anamnesis.api.spi.ModelExporter;
}
