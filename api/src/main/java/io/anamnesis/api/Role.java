package io.anamnesis.api;

/**
 * What a stored tensor is for in its quantization scheme. Open for plugins: a scheme with
 * a companion of its own makes a {@code new Role("codebook")}.
 *
 * @param name lower-case, hyphenated, as {@code amn parse} prints it
 */
public record Role(String name) {
    public static final Role QUANTIZED = new Role("quantized");
    public static final Role SCALE = new Role("scale");
    public static final Role ZERO_POINT = new Role("zero-point");
    public static final Role G_IDX = new Role("g_idx");
    public static final Role ABSMAX = new Role("absmax");
    public static final Role QUANT_MAP = new Role("quant-map");
    public static final Role QUANT_STATE = new Role("quant-state");
    /** Stored in a plain dtype and copied to the output unchanged. */
    public static final Role PASSTHROUGH = new Role("passthrough");

    public Role {
        if (name == null || name.isBlank()) throw new IllegalArgumentException("role name is empty");
    }

    @Override
    public String toString() {
        return name;
    }
}
