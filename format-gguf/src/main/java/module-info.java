/** The GGUF format (v1-v3, both byte orders): reader and writer. */
module io.anamnesis.format.gguf {
    requires io.anamnesis.api;


    // exports and provides arrive with the implementation.
}
