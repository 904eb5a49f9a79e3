package io.anamnesis.quant.gguf;

import java.util.Optional;

/**
 * The encoder of each ggml type this module can write: the one place the forget path looks
 * encoders up. Types without an entry are refused by the quantizer as not yet encodable.
 */
final class GgufEncoders {
    private GgufEncoders() {
    }

    /** The row encoder of a block type, byte-identical with ggml's {@code ggml_quantize_chunk}. */
    static Optional<RowEncoder> forType(GgufBlockType type) {
        return Optional.ofNullable(switch (type) {
            // one line per type, e.g.: case Q8_0 -> SimpleEncoders::q8_0;
            default -> null;
        });
    }
}
