/**
 * The GGUF format (v1-v3, either byte order): a reader of every ggml type and a v3 writer, a
 * reader of llama.cpp's legacy importance-matrix {@code .dat} files, and the exporter of a
 * Hugging Face model folder laid out as llama.cpp's converter writes it (package {@code hf}).
 *
 * <p><b>Add it for</b>: opening {@code .gguf} files (llama.cpp, Ollama), writing GGUF with
 * {@code convert --to gguf} or {@code forget}, turning a Hugging Face model folder into one
 * GGUF file; with {@code anamnesis-quant-gguf} to recover or quantize the block types.
 *
 * @provides io.anamnesis.api.spi.FormatReader {@code gguf} ({@code .gguf}) and {@code imatrix} (llama.cpp's {@code .dat}, recognized by its header)
 * @provides io.anamnesis.api.spi.FormatWriter {@code gguf}: GGUF v3, metadata in GGUF's types
 * @provides io.anamnesis.api.spi.ModelExporter {@code gguf}: a Hugging Face model folder as llama.cpp's converter lays it out
 */
module io.anamnesis.format.gguf {
    requires transitive io.anamnesis.api;

    exports io.anamnesis.format.gguf;

    provides io.anamnesis.api.spi.FormatReader with io.anamnesis.format.gguf.GgufReader,
            io.anamnesis.format.gguf.ImatrixDatReader;
    provides io.anamnesis.api.spi.FormatWriter with io.anamnesis.format.gguf.GgufWriter;
    provides io.anamnesis.api.spi.ModelExporter with io.anamnesis.format.gguf.hf.HfGgufExporter;
}
