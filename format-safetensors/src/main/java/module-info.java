/** The safetensors format: memory-mapped reader, header-only stream reader, streaming writer. */
module io.anamnesis.format.safetensors {
    requires transitive io.anamnesis.api;
    requires com.fasterxml.jackson.core;

    exports io.anamnesis.format.safetensors;

    provides io.anamnesis.api.spi.FormatReader with io.anamnesis.format.safetensors.SafetensorsReader;
    provides io.anamnesis.api.spi.FormatWriter with io.anamnesis.format.safetensors.SafetensorsWriter;
}
