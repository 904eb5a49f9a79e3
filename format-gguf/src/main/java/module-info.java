/**
 * The GGUF format (v1-v3, both byte orders): reader and writer; llama.cpp's legacy imatrix .dat reader;
 * a Hugging Face model folder laid out as llama.cpp's converter writes it (package {@code hf}).
 */
module io.anamnesis.format.gguf {
    requires transitive io.anamnesis.api;

    exports io.anamnesis.format.gguf;

    provides io.anamnesis.api.spi.FormatReader with io.anamnesis.format.gguf.GgufReader,
            io.anamnesis.format.gguf.ImatrixDatReader;
    provides io.anamnesis.api.spi.FormatWriter with io.anamnesis.format.gguf.GgufWriter;
    provides io.anamnesis.api.spi.ModelExporter with io.anamnesis.format.gguf.hf.HfGgufExporter;
}
