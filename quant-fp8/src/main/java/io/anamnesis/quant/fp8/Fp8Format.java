package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Float8;

import java.util.Optional;

/**
 * The FP8 encodings checkpoints ship, each the api's {@link Float8} number format of the
 * same name (which holds the decode table) under the safetensors dtype it is stored as.
 */
public enum Fp8Format {
    /** {@code float8_e4m3fn}, dtype {@code F8_E4M3}: bias 7, no infinities, {@code S.1111.111} NaN. */
    E4M3(Float8.E4M3FN),
    /** {@code float8_e5m2}, dtype {@code F8_E5M2}: IEEE 754 rules, bias 15. */
    E5M2(Float8.E5M2),
    /** {@code float8_e4m3fnuz}, dtype {@code F8_E4M3FNUZ} (AMD ROCm checkpoints): bias 8, {@code 0x80} NaN, no -0. */
    E4M3FNUZ(Float8.E4M3FNUZ),
    /** {@code float8_e5m2fnuz}, dtype {@code F8_E5M2FNUZ}: bias 16, {@code 0x80} NaN, no -0, no infinities. */
    E5M2FNUZ(Float8.E5M2FNUZ);

    private final Float8 number;
    private final float[] table;
    private final Fp8Grid grid;

    Fp8Format(Float8 number) {
        this.number = number;
        this.table = number.table();
        this.grid = Fp8Grid.of(number);
    }

    /** The format stored under a safetensors dtype, if it is one of these. */
    public static Optional<Fp8Format> of(DType dtype) {
        for (Fp8Format f : values()) {
            if (f.dtype().equals(dtype)) return Optional.of(f);
        }
        return Optional.empty();
    }

    /** The number format. */
    public Float8 number() {
        return number;
    }

    public DType dtype() {
        return number.dtype();
    }

    public int mantissaBits() {
        return number.mantissaBits();
    }

    public int bias() {
        return number.bias();
    }

    /** The largest finite value: 448 (E4M3), 57344 (E5M2 and E5M2FNUZ), 240 (E4M3FNUZ). */
    public float maxFinite() {
        return grid.max();
    }

    /** The F32 value of a code (0..255), exact. */
    public float decode(int code) {
        return table[code & 0xFF];
    }

    /** The decode table, shared: callers must not write to it. */
    float[] table() {
        return table;
    }

    /** What the encoders round with. */
    Fp8Grid grid() {
        return grid;
    }
}
