/**
 * The anamnesis api: the service interfaces every format and quantization module implements,
 * the values they exchange, the typed errors and the limits, and {@link io.anamnesis.api.Anamnesis},
 * the entry point that finds the installed modules with {@link java.util.ServiceLoader}. It
 * depends on nothing but the JDK.
 *
 * <p><b>Add it for</b>: compiling against anamnesis. A library user adds it with the format and
 * quant modules it needs ({@code io.anamnesis:anamnesis-api}, versions from
 * {@code io.anamnesis:anamnesis-bom}); a plugin author depends on it alone and implements one
 * of the interfaces of {@link io.anamnesis.api.spi}, each shown there with a minimal example.
 *
 * @uses io.anamnesis.api.spi.FormatReader the readers {@link io.anamnesis.api.Anamnesis#installed()} detects files with
 * @uses io.anamnesis.api.spi.FormatWriter the writers {@code Anamnesis.writer(format)} returns
 * @uses io.anamnesis.api.spi.Dequantizer the schemes {@code Anamnesis.plan} asks to claim tensor groups
 * @uses io.anamnesis.api.spi.Quantizer the targets {@code Anamnesis.forget} quantizes to
 * @uses io.anamnesis.api.spi.ModelExporter the formats a whole model folder is exported to
 */
module io.anamnesis.api {
    exports io.anamnesis.api;
    exports io.anamnesis.api.spi;
    exports io.anamnesis.api.numeric;
    exports io.anamnesis.api.write;
    exports io.anamnesis.api.config;
    exports io.anamnesis.api.json;
    exports io.anamnesis.api.model;
    exports io.anamnesis.api.read;

    uses io.anamnesis.api.spi.FormatReader;
    uses io.anamnesis.api.spi.FormatWriter;
    uses io.anamnesis.api.spi.Dequantizer;
    uses io.anamnesis.api.spi.Quantizer;
    uses io.anamnesis.api.spi.ModelExporter;
}
