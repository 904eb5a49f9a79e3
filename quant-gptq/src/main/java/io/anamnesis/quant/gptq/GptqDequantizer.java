package io.anamnesis.quant.gptq;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Role;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.config.QuantizationConfig;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.spi.Recovery;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * GPTQ (AutoGPTQ, GPTQModel): {@code <p>.qweight + .qzeros + .scales [+ .g_idx] -> <p>.weight [out, in]}.
 * 2, 3, 4 and 8 bits; any group size or none (-1); act-order through g_idx; v1 zeros
 * (AutoGPTQ, {@code checkpoint_format: gptq}: stored zero + 1) and v2 zeros (GPTQModel
 * {@code gptq_v2}: as stored). {@code <p>.bias} is left to pass through.
 *
 * <p>GPTQ and AWQ share tensor names. A config that names its method decides; without one a
 * group is GPTQ when it has a g_idx or when scales has as many columns as qweight (AWQ's
 * scales have eight times as many). The AWQ module applies the same rules, so the two never
 * claim the same group.
 */
public final class GptqDequantizer implements Dequantizer {

    @Override
    public String scheme() {
        return "gptq";
    }

    @Override
    public String description() {
        return "GPTQ (AutoGPTQ, GPTQModel): 2/3/4/8-bit, grouped or not, act-order g_idx, v1 and v2 zeros";
    }

    @Override
    public List<Recovery> claim(ClaimContext context) {
        TensorArchive archive = context.archive();
        List<String> prefixes = new ArrayList<>();
        for (TensorEntry e : archive.tensors()) {
            if (e.name().endsWith(".qweight")) prefixes.add(e.name().substring(0, e.name().length() - ".qweight".length()));
        }
        if (prefixes.isEmpty()) return List.of();
        Optional<GptqConfig> found = GptqConfig.find(context);
        String method = found.map(GptqConfig::method).orElse("");
        if (!method.isEmpty() && !method.equals(GptqConfig.GPTQ)) return List.of();
        Optional<QuantizationConfig> config = found.map(GptqConfig::config);
        List<Recovery> out = new ArrayList<>();
        for (String p : prefixes) {
            Group g = Group.of(archive, p);
            if (method.isEmpty() && !g.isGptqByShape()) continue;
            out.add(recover(g, config, context.limits()));
        }
        return out;
    }

    /** The stored tensors of one quantized layer. */
    record Group(String prefix, TensorEntry qweight, Optional<TensorEntry> qzeros, Optional<TensorEntry> scales,
                 Optional<TensorEntry> gIdx) {

        static Group of(TensorArchive a, String p) {
            return new Group(p, a.tensor(p + ".qweight").orElseThrow(), a.tensor(p + ".qzeros"),
                    a.tensor(p + ".scales"), a.tensor(p + ".g_idx"));
        }

        /**
         * Without a config: a g_idx, or scales as wide as qweight, means GPTQ; scales eight
         * times as wide means AWQ (not ours); anything else cannot be told apart.
         */
        boolean isGptqByShape() {
            if (gIdx.isPresent()) return true;
            if (scales.isEmpty()) {
                throw MalformedFileException.inTensor(qweight.name(), "has no companion " + prefix + ".scales");
            }
            Shape q = qweight.shape();
            Shape s = scales.get().shape();
            if (q.rank() == 2 && s.rank() == 2) {
                if (s.dim(1) == q.dim(1)) return true;
                if (s.dim(1) == 8 * q.dim(1)) return false;
            }
            throw UnsupportedFeatureException.inTensor(qweight.name(), "cannot tell GPTQ from AWQ: no "
                    + "quantization_config.quant_method in the metadata, config.json, quantize_config.json or "
                    + "quant_config.json, and the shapes (qweight " + q + ", scales " + s + ") fit neither");
        }
    }

    /**
     * One group's recovery: its tensors checked, then the checkpoint format (zero offset), the
     * bit width, in_features and the group size worked out from the config and the shapes,
     * each checked against the others, in that order.
     */
    static Recovery recover(Group g, Optional<QuantizationConfig> config, ParseLimits limits) {
        CheckedGroup t = CheckedGroup.of(g);
        int zeroOffset = zeroOffset(config, t.qweight());
        int bits = bits(config, g, t);
        long in = inFeatures(g, t, bits, limits);
        int groupSize = groupSize(config, g, t, in);

        var layout = new GptqKernel.Layout(bits, (int) in, (int) t.out(), (int) t.groups(),
                (int) t.qzeros().shape().dim(1), zeroOffset, t.scales().dtype());
        boolean actOrder = config.flatMap(c -> c.bool("desc_act")).orElse(false);
        String description = "GPTQ " + bits + "-bit, " + (groupSize == -1 ? "one group" : "group " + groupSize)
                + (actOrder ? ", act-order" : "") + ", " + (zeroOffset == 1 ? "v1" : "v2") + " zeros";

        Map<String, Role> inputs = new LinkedHashMap<>();
        inputs.put(t.qweight().name(), Role.QUANTIZED);
        inputs.put(t.scales().name(), Role.SCALE);
        inputs.put(t.qzeros().name(), Role.ZERO_POINT);
        g.gIdx().ifPresent(e -> inputs.put(e.name(), Role.G_IDX));
        return new Recovery(g.prefix() + ".weight", Shape.of(t.out(), in), "gptq", description, inputs,
                new GptqKernel.Kernel(t.qweight(), t.qzeros(), t.scales(), g.gIdx(), layout, groupSize));
    }

    /**
     * A group's tensors, each present with the dtype and rank GPTQ stores, and
     * agreeing on out_features and the number of groups.
     *
     * @param out    out_features (columns of qweight and scales)
     * @param groups rows of scales and qzeros
     */
    record CheckedGroup(TensorEntry qweight, TensorEntry qzeros, TensorEntry scales, long out, long groups) {
        static CheckedGroup of(Group g) {
            String p = g.prefix();
            TensorEntry qweight = g.qweight();
            TensorEntry qzeros = g.qzeros().orElseThrow(() ->
                    MalformedFileException.inTensor(qweight.name(), "has no companion " + p + ".qzeros"));
            TensorEntry scales = g.scales().orElseThrow(() ->
                    MalformedFileException.inTensor(qweight.name(), "has no companion " + p + ".scales"));
            requireInt32(qweight);
            requireInt32(qzeros);
            requireRank(qweight, 2);
            requireRank(qzeros, 2);
            requireRank(scales, 2);
            DType st = scales.dtype();
            if (!st.equals(DType.F16) && !st.equals(DType.BF16) && !st.equals(DType.F32)) {
                throw UnsupportedFeatureException.inTensor(scales.name(), "GPTQ scales in " + st + " (expected F16, BF16 or F32)");
            }
            if (g.gIdx().isPresent()) {
                TensorEntry gi = g.gIdx().get();
                requireRank(gi, 1);
                if (!gi.dtype().equals(DType.I32) && !gi.dtype().equals(DType.I64)) {
                    throw MalformedFileException.inTensor(gi.name(), "g_idx is " + gi.dtype() + ", expected I32 or I64");
                }
            }
            long out = qweight.shape().dim(1);
            long groups = scales.shape().dim(0);
            if (scales.shape().dim(1) != out) {
                throw MalformedFileException.inTensor(scales.name(), "has " + scales.shape().dim(1)
                        + " columns, qweight " + qweight.shape() + " has " + out + " output features");
            }
            if (qzeros.shape().dim(0) != groups) {
                throw MalformedFileException.inTensor(qzeros.name(), "has " + qzeros.shape().dim(0)
                        + " groups, scales " + scales.shape() + " has " + groups);
            }
            return new CheckedGroup(qweight, qzeros, scales, out, groups);
        }

        /** int32 rows of qweight: in_features * bits / 32, rounded up. */
        long rows() {
            return qweight.shape().dim(0);
        }
    }

    /** 1 for v1 zeros (AutoGPTQ's checkpoint_format gptq: stored zero + 1), 0 for GPTQModel's gptq_v2. */
    private static int zeroOffset(Optional<QuantizationConfig> config, TensorEntry qweight) {
        String format = config.flatMap(c -> c.text("checkpoint_format", "format")).orElse("gptq").toLowerCase(Locale.ROOT);
        int zeroOffset = switch (format) {
            case "gptq", "" -> 1;
            case "gptq_v2" -> 0;
            default -> throw UnsupportedFeatureException.inTensor(qweight.name(), "GPTQ checkpoint_format '" + format
                    + "' is not supported (only gptq, v1 zeros, and gptq_v2)");
        };
        if (config.flatMap(c -> c.bool("is_marlin_format")).orElse(false)) {
            throw UnsupportedFeatureException.inTensor(qweight.name(), "GPTQ Marlin-format weights are not supported");
        }
        return zeroOffset;
    }

    /** The bit width: the config's, else the packing ratio of qweight to g_idx, else of qzeros to scales. */
    private static int bits(Optional<QuantizationConfig> config, Group g, CheckedGroup t) {
        long rows = t.rows();
        Optional<Integer> configBits = config.flatMap(c -> c.integer("bits", "w_bit"));
        int bits;
        if (configBits.isPresent()) {
            bits = configBits.get();
        } else if (g.gIdx().isPresent() && g.gIdx().get().shape().dim(0) > 0 && rows * 32 % g.gIdx().get().shape().dim(0) == 0) {
            bits = (int) (rows * 32 / g.gIdx().get().shape().dim(0));
        } else if (t.out() > 0 && t.qzeros().shape().dim(1) * 32 % t.out() == 0) {
            bits = (int) (t.qzeros().shape().dim(1) * 32 / t.out());
        } else {
            throw UnsupportedFeatureException.inTensor(t.qweight().name(), "GPTQ bits unknown: no quantization_config.bits "
                    + "(metadata, config.json or quantize_config.json) and the shapes do not determine it");
        }
        if (bits != 2 && bits != 3 && bits != 4 && bits != 8) {
            throw UnsupportedFeatureException.inTensor(t.qweight().name(), "GPTQ with " + bits + " bits (supported: 2, 3, 4, 8)");
        }
        return bits;
    }

    /**
     * in_features: g_idx's length, else what the packed rows hold; checked against qweight's
     * and qzeros' packing, the kernel's index range and the limits, and against the groups.
     */
    private static long inFeatures(Group g, CheckedGroup t, int bits, ParseLimits limits) {
        TensorEntry qweight = t.qweight();
        TensorEntry qzeros = t.qzeros();
        long rows = t.rows();
        long out = t.out();
        long groups = t.groups();
        long in;
        if (g.gIdx().isPresent()) {
            in = g.gIdx().get().shape().dim(0);
        } else if (rows * 32 % bits == 0) {
            in = rows * 32 / bits;
        } else {
            throw MalformedFileException.inTensor(qweight.name(), rows + " packed rows do not hold a whole number of "
                    + bits + "-bit values");
        }
        if ((in * bits + 31) / 32 != rows) {
            throw MalformedFileException.inTensor(qweight.name(), "has " + rows + " packed rows; " + in + " inputs of "
                    + bits + " bits need " + (in * bits + 31) / 32);
        }
        if ((out * bits + 31) / 32 != qzeros.shape().dim(1)) {
            throw MalformedFileException.inTensor(qzeros.name(), "has " + qzeros.shape().dim(1) + " words per group; "
                    + out + " outputs of " + bits + " bits need " + (out * bits + 31) / 32);
        }
        if (in > Integer.MAX_VALUE / 2 || out > Integer.MAX_VALUE / 2 || groups > Integer.MAX_VALUE / 64
                || groups * 64 > Integer.MAX_VALUE) {
            throw UnsupportedFeatureException.inTensor(qweight.name(), "GPTQ layer too large: in " + in + ", out " + out
                    + ", groups " + groups);
        }
        // the kernel keeps a group index per input row and a scale and zero per group and tile column
        ParseLimits.check("in_features of " + qweight.name(), in, limits.maxArrayLength());
        if (groups > Math.max(1, in)) {
            throw MalformedFileException.inTensor(t.scales().name(), "has " + groups + " groups for " + in + " inputs");
        }
        if (groups < 1 && in > 0) {
            throw MalformedFileException.inTensor(t.scales().name(), "has no groups");
        }
        return in;
    }

    /** The group size: the config's (checked against the groups stored), else what in_features and the groups imply; -1 for one group. */
    private static int groupSize(Optional<QuantizationConfig> config, Group g, CheckedGroup t, long in) {
        long groups = t.groups();
        Optional<Integer> configGroup = config.flatMap(c -> c.integer("group_size", "q_group_size"));
        if (configGroup.isPresent()) {
            int groupSize = configGroup.get();
            if (groupSize == 0 || groupSize < -1) {
                throw MalformedFileException.inTensor(t.qweight().name(), "GPTQ group_size " + groupSize);
            }
            long expected = groupSize == -1 ? 1 : (in + groupSize - 1) / groupSize;
            if (groups != expected && !(in == 0 && groups <= 1)) {
                throw MalformedFileException.inTensor(t.scales().name(), "has " + groups + " groups; " + in
                        + " inputs in groups of " + groupSize + " need " + expected);
            }
            return groupSize;
        } else if (groups == 1) {
            return -1;
        } else if (g.gIdx().isPresent() || (groups > 0 && in % groups == 0)) {
            return (int) (in / Math.max(1, groups));
        }
        throw UnsupportedFeatureException.inTensor(t.qweight().name(), "GPTQ group_size unknown: no "
                + "quantization_config.group_size and " + in + " inputs do not split evenly into " + groups + " groups");
    }

    private static void requireInt32(TensorEntry e) {
        if (!e.dtype().equals(DType.I32) && !e.dtype().equals(DType.U32)) {
            throw MalformedFileException.inTensor(e.name(), "is " + e.dtype() + "; GPTQ packs into I32");
        }
    }

    private static void requireRank(TensorEntry e, int rank) {
        if (e.shape().rank() != rank) {
            throw MalformedFileException.inTensor(e.name(), "has shape " + e.shape() + ", expected rank " + rank);
        }
    }
}
