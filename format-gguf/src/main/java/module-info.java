/**
 * The GGUF format (v1-v3, either byte order): a reader of every ggml type and a v3 writer,
 * and a reader of llama.cpp's legacy importance-matrix {@code .dat} files.
 *
 * <p><b>Add it for</b>: opening {@code .gguf} files (llama.cpp, Ollama), writing GGUF with
 * {@code convert --to gguf} or {@code forget}; with {@code anamnesis-quant-gguf} to recover or
 * quantize the block types.
 *
 * @provides io.anamnesis.api.spi.FormatReader {@code gguf} ({@code .gguf}) and {@code imatrix} (llama.cpp's {@code .dat}, recognized by its header)
 * @provides io.anamnesis.api.spi.FormatWriter {@code gguf}: GGUF v3, metadata in GGUF's types
 */
module io.anamnesis.format.gguf {
    requires transitive io.anamnesis.api;

    exports io.anamnesis.format.gguf;

    provides io.anamnesis.api.spi.FormatReader with io.anamnesis.format.gguf.GgufReader,
            io.anamnesis.format.gguf.ImatrixDatReader;
    provides io.anamnesis.api.spi.FormatWriter with io.anamnesis.format.gguf.GgufWriter;
}
