package org.example.mlx;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.Role;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.spi.Recovery;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Recovers MLX's affine quantization ({@code mlx.core.quantize}, {@code mode="affine"}, what
 * {@code mlx_lm.convert -q} writes): each quantized layer {@code <m>} stores
 *
 * <ul>
 *   <li>{@code <m>.weight}, U32 {@code [..., out, in * bits / 32]}: each row's values packed
 *       as one little-endian bit stream, value {@code i} at bits {@code i*bits ..} (for 2, 4
 *       and 8 bits, {@code 32/bits} whole values per word; for 3, 5 and 6 bits MLX packs 8, 8
 *       and 4 values into 3, 5 and 3 bytes, which is the same stream);</li>
 *   <li>{@code <m>.scales} and {@code <m>.biases}, {@code [..., out, in / group_size]} in the
 *       model's float dtype (F16, BF16 or F32), one pair per group of {@code group_size}
 *       consecutive values of a row;</li>
 * </ul>
 *
 * and the value is {@code w = scales * q + biases}. Bits and group size come from the
 * model's {@code config.json} ({@link MlxQuantization}); without one, from the shapes when
 * only one pair of the sizes MLX supports fits them.
 */
public final class MlxAffineDequantizer implements Dequantizer {
    /** The bit widths MLX's affine mode packs. */
    static final int[] BITS = {2, 3, 4, 5, 6, 8};
    /** The group sizes MLX's affine mode takes. */
    static final int[] GROUP_SIZES = {32, 64, 128};

    /** What {@code amn parse} calls a biases tensor: the per-group offset of the affine map. */
    static final Role BIASES = new Role("affine-bias");

    @Override
    public String scheme() {
        return "mlx";
    }

    @Override
    public String description() {
        return "MLX affine quantization (mlx-community): U32-packed 2-8 bit weights with per-group scales and biases";
    }

    @Override
    public List<Recovery> claim(ClaimContext context) {
        TensorArchive archive = context.archive();
        Map<String, TensorEntry> byName = new LinkedHashMap<>();
        for (TensorEntry e : archive.tensors()) byName.putIfAbsent(e.name(), e);
        MlxQuantization config = null;
        List<Recovery> out = new ArrayList<>();
        for (TensorEntry weight : archive.tensors()) {
            if (!weight.name().endsWith(".weight") || !weight.dtype().equals(DType.U32)) continue;
            String module = weight.name().substring(0, weight.name().length() - ".weight".length());
            TensorEntry scales = byName.get(module + ".scales");
            TensorEntry biases = byName.get(module + ".biases");
            if (scales == null && biases == null) continue;   // a U32 weight of some other kind
            if (scales == null || biases == null) {
                throw malformed(weight, "has " + (scales == null ? "biases but no scales" : "scales but no biases"));
            }
            if (config == null) {
                config = MlxQuantization.of(context);
                if (config.mode().filter(m -> !m.equals("affine")).isPresent()) {
                    throw new UnsupportedFeatureException(weight.name() + ": MLX quantization mode "
                            + config.mode().get() + " is not supported by this plugin (affine only)");
                }
            }
            out.add(recovery(weight, scales, biases, config.bits(module), config.groupSize(module)));
        }
        return out;
    }

    private Recovery recovery(TensorEntry weight, TensorEntry scales, TensorEntry biases,
                              Optional<Integer> configuredBits, Optional<Integer> configuredGroup) {
        Shape w = weight.shape();
        if (w.rank() < 2) throw malformed(weight, "must have at least two dimensions, has " + w);
        if (!scales.dtype().equals(biases.dtype()) || !isFloat(scales.dtype())) {
            throw malformed(weight, "scales and biases must share a float dtype (F16, BF16, F32), are "
                    + scales.dtype() + " and " + biases.dtype());
        }
        if (!scales.shape().equals(biases.shape()) || scales.shape().rank() != w.rank()
                || !leading(scales.shape()).equals(leading(w))) {
            throw malformed(weight, "scales " + scales.shape() + " and biases " + biases.shape()
                    + " do not match the weight " + w);
        }
        long words = w.lastDim();
        long groups = scales.shape().lastDim();
        int bits = -1;
        int group = -1;
        if (configuredBits.isPresent() && configuredGroup.isPresent()) {
            bits = configuredBits.get();
            group = configuredGroup.get();
            if (!fits(words, groups, bits, group)) {
                throw malformed(weight, "config.json says " + bits + "-bit, group " + group + ", which "
                        + w + " with " + groups + " groups per row does not fit");
            }
        } else {
            for (int b : BITS) {
                for (int g : GROUP_SIZES) {
                    if (!fits(words, groups, b, g)) continue;
                    if (bits > 0) {
                        throw malformed(weight, "fits both " + bits + "-bit group " + group + " and " + b
                                + "-bit group " + g + "; the model's config.json (quantization: bits, group_size) says which");
                    }
                    bits = b;
                    group = g;
                }
            }
            if (bits < 0) throw malformed(weight, "fits no MLX bit width and group size with " + groups + " groups per row");
        }
        long in = groups * group;
        long[] dims = w.toArray();
        dims[dims.length - 1] = in;
        Map<String, Role> inputs = new LinkedHashMap<>();
        inputs.put(weight.name(), Role.QUANTIZED);   // first: the recovered weight takes its place
        inputs.put(scales.name(), Role.SCALE);
        inputs.put(biases.name(), BIASES);
        return new Recovery(weight.name(), Shape.of(dims), scheme(),
                "MLX affine " + bits + "-bit, group " + group + ", " + scales.dtype() + " scales",
                inputs, new AffineKernel(weight, scales, biases, bits, group, in, words));
    }

    /** {@code in = words * 32 / bits} values per row, a whole number of groups. */
    static boolean fits(long words, long groups, int bits, int group) {
        if (bits < 1 || bits > 8 || group < 1) return false;
        long packedBits = Math.multiplyExact(words, 32L);
        return packedBits % bits == 0 && packedBits / bits == Math.multiplyExact(groups, (long) group);
    }

    private static boolean isFloat(DType t) {
        return t.equals(DType.F16) || t.equals(DType.BF16) || t.equals(DType.F32);
    }

    private static Shape leading(Shape s) {
        long[] d = s.toArray();
        return Shape.of(java.util.Arrays.copyOf(d, d.length - 1));
    }

    private static MalformedFileException malformed(TensorEntry weight, String what) {
        return new MalformedFileException("MLX quantized " + weight.name() + " " + what);
    }
}
