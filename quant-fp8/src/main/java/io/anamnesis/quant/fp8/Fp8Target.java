package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;

import java.util.Locale;
import java.util.Optional;

/**
 * What {@code amn forget --to} writes, by target name: one FP8 format encoded natively (the
 * scale is {@code amax / max finite}, so a group's largest value takes the format's largest
 * code), or E4M3FNUZ as vLLM's ROCm path makes it from an E4M3 checkpoint.
 *
 * <p>That second way exists because ROCm checkpoints are made both ways: vLLM's
 * {@code normalize_e4m3fn_to_e4m3fnuz} (w8a8_utils.py) takes E4M3 codes made with
 * {@code amax / 448}, reads their bits as E4M3FNUZ (worth half as much) and doubles the
 * scale, so its codes stop at {@code 0x7E} (224) and never use {@code 0x7F} (240), and its
 * scales are {@code 2 x} the E4M3 ones, rounded into the scale's dtype before the doubling.
 * Neither way can be told from the other by headers or config; {@link Fp8Recipe} tells them
 * apart by the codes.
 */
enum Fp8Target {
    FP8(Fp8Format.E4M3, "FP8 E4M3 (float8_e4m3fn), --granularity tensor|channel|block (128x128), --scale-dtype f32|bf16"),
    FP8_E5M2(Fp8Format.E5M2, "FP8 E5M2, the same scale layouts"),
    FP8_E4M3FNUZ(Fp8Format.E4M3FNUZ, "FP8 E4M3FNUZ (AMD ROCm, float8_e4m3fnuz), scale amax/240, the same scale layouts"),
    FP8_E5M2FNUZ(Fp8Format.E5M2FNUZ, "FP8 E5M2FNUZ (AMD ROCm, float8_e5m2fnuz), scale amax/57344, the same scale layouts"),
    FP8_E4M3FNUZ_VLLM(Fp8Format.E4M3FNUZ, "FP8 E4M3FNUZ as vLLM's ROCm path makes it from E4M3: scale 2 x amax/448,"
            + " codes up to 0x7E (224), the same scale layouts");

    private final Fp8Format format;
    private final String description;

    Fp8Target(Fp8Format format, String description) {
        this.format = format;
        this.description = description;
    }

    /** The name {@code --to} takes: {@code fp8}, {@code fp8_e5m2}, {@code fp8_e4m3fnuz}, ... */
    String targetName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The target of a name, if it is one of these. */
    static Optional<Fp8Target> named(String name) {
        for (Fp8Target t : values()) {
            if (t.targetName().equals(name.toLowerCase(Locale.ROOT))) return Optional.of(t);
        }
        return Optional.empty();
    }

    /** The target that writes {@code format} natively. */
    static Fp8Target nativeOf(Fp8Format format) {
        for (Fp8Target t : values()) {
            if (t.format == format) return t;
        }
        throw new IllegalArgumentException("no target writes " + format);
    }

    /** The format stored (the weight's dtype). */
    Fp8Format format() {
        return format;
    }

    String description() {
        return description;
    }

    /** Whether this is E4M3 made the E4M3 way and then read as E4M3FNUZ. */
    private boolean viaE4m3() {
        return this == FP8_E4M3FNUZ_VLLM;
    }

    /** The stored scale of a group whose largest finite magnitude is {@code amax} (see {@link Fp8Encoder#scale}). */
    float scale(float amax, DType scaleDtype) {
        // the E4M3 scale as vLLM found it in the checkpoint, then doubled (exact: a power of two)
        if (viaE4m3()) return 2 * Fp8Encoder.scale(Fp8Format.E4M3, amax, scaleDtype);
        return Fp8Encoder.scale(format, amax, scaleDtype);
    }

    /**
     * Codes of {@code x[off, off + n)} under the stored {@code scale}, into {@code out[outOff...]},
     * and what they decode to into {@code decoded[outOff...]} when it is not null (see
     * {@link Fp8Encoder#encode(Fp8Format, float[], int, int, float, byte[], int, float[])}).
     */
    void encode(float[] x, int off, int n, float scale, byte[] out, int outOff, float[] decoded) {
        if (!viaE4m3()) {
            Fp8Encoder.encode(format, x, off, n, scale, out, outOff, decoded);
            return;
        }
        // E4M3 codes under the E4M3 scale (half the stored one, exactly), then vLLM's byte fix
        Fp8Encoder.encode(Fp8Format.E4M3, x, off, n, scale / 2, out, outOff, null);
        for (int i = outOff; i < outOff + n; i++) {
            out[i] = (byte) Fp8Encoder.e4m3ToFnuz(out[i]);
            if (decoded != null) decoded[i] = format.decode(out[i]) * scale;
        }
    }
}
