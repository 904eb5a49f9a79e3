/**
 * The safetensors format: a memory-mapped reader, a header-only reader for standard input, a
 * streaming writer.
 *
 * <p><b>Add it for</b>: opening and writing {@code .safetensors} files (Hugging Face models);
 * the output format of {@code remember} and most conversions.
 *
 * @provides io.anamnesis.api.spi.FormatReader {@code safetensors} ({@code .safetensors}), every dtype of the spec
 * @provides io.anamnesis.api.spi.FormatWriter {@code safetensors}: tensors streamed in file order, written atomically
 */
module io.anamnesis.format.safetensors {
    requires transitive io.anamnesis.api;
    requires com.fasterxml.jackson.core;

    exports io.anamnesis.format.safetensors;

    provides io.anamnesis.api.spi.FormatReader with io.anamnesis.format.safetensors.SafetensorsReader;
    provides io.anamnesis.api.spi.FormatWriter with io.anamnesis.format.safetensors.SafetensorsWriter;
}
