/** The GGUF format (v1-v3, both byte orders): reader and writer. */
module io.anamnesis.format.gguf {
    requires transitive io.anamnesis.api;

    exports io.anamnesis.format.gguf;

    provides io.anamnesis.api.spi.FormatReader with io.anamnesis.format.gguf.GgufReader;
    provides io.anamnesis.api.spi.FormatWriter with io.anamnesis.format.gguf.GgufWriter;
}
