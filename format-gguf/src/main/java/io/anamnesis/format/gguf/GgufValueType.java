package io.anamnesis.format.gguf;

import java.util.Optional;

/**
 * {@code gguf_metadata_value_type}: the type tag of a metadata value, looked up by its id
 * (never by ordinal). {@code size} is the width of fixed-size values, 0 for string and array.
 */
public enum GgufValueType {
    UINT8(0, 1), INT8(1, 1), UINT16(2, 2), INT16(3, 2), UINT32(4, 4), INT32(5, 4), FLOAT32(6, 4),
    BOOL(7, 1), STRING(8, 0), ARRAY(9, 0), UINT64(10, 8), INT64(11, 8), FLOAT64(12, 8);

    public final int id;
    public final int size;

    GgufValueType(int id, int size) {
        this.id = id;
        this.size = size;
    }

    private static final GgufValueType[] BY_ID = new GgufValueType[13];

    static {
        for (GgufValueType t : values()) BY_ID[t.id] = t;
    }

    public static Optional<GgufValueType> byId(long id) {
        return id < 0 || id >= BY_ID.length ? Optional.empty() : Optional.ofNullable(BY_ID[(int) id]);
    }

    /** The spec's lower-case spelling, as in "[array of 151936 string]". */
    public String spelling() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    public boolean isInteger() {
        return switch (this) {
            case UINT8, INT8, UINT16, INT16, UINT32, INT32, UINT64, INT64 -> true;
            default -> false;
        };
    }
}
