/** The safetensors format: memory-mapped reader, header-only stream reader, streaming writer. */
module io.anamnesis.format.safetensors {
    requires io.anamnesis.api;
    requires com.fasterxml.jackson.core;


    // exports and provides arrive with the implementation.
}
