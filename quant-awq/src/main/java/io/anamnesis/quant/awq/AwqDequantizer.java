package io.anamnesis.quant.awq;

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
 * AWQ (AutoAWQ GEMM, 4-bit): {@code <p>.qweight + .qzeros + .scales -> <p>.weight [out, in]}.
 * The GEMV layout is refused: its packing differs and guessing would produce wrong weights.
 *
 * <p>GPTQ and AWQ share tensor names. A config that names its method decides; without one a
 * group is AWQ only when it has no g_idx and its scales have eight times as many columns as
 * qweight. The GPTQ module applies the same rules, so the two never claim the same group.
 */
public final class AwqDequantizer implements Dequantizer {

    @Override
    public String scheme() {
        return "awq";
    }

    @Override
    public String description() {
        return "AWQ (AutoAWQ GEMM): 4-bit, grouped, interleaved packing";
    }

    @Override
    public List<Recovery> claim(ClaimContext context) {
        TensorArchive archive = context.archive();
        List<String> prefixes = new ArrayList<>();
        for (TensorEntry e : archive.tensors()) {
            if (e.name().endsWith(".qweight")) prefixes.add(e.name().substring(0, e.name().length() - ".qweight".length()));
        }
        if (prefixes.isEmpty()) return List.of();
        Optional<AwqConfig> found = AwqConfig.find(context);
        String method = found.map(AwqConfig::method).orElse("");
        if (!method.isEmpty() && !method.equals(AwqConfig.AWQ)) return List.of();
        Optional<QuantizationConfig> config = found.map(AwqConfig::config);
        List<Recovery> out = new ArrayList<>();
        for (String p : prefixes) {
            TensorEntry qweight = archive.tensor(p + ".qweight").orElseThrow();
            Optional<TensorEntry> qzeros = archive.tensor(p + ".qzeros");
            Optional<TensorEntry> scales = archive.tensor(p + ".scales");
            if (method.isEmpty() && !isAwqByShape(p, qweight, scales, archive.tensor(p + ".g_idx").isPresent())) continue;
            out.add(recover(p, qweight, qzeros, scales, config, context.limits()));
        }
        return out;
    }

    /**
     * Without a config: a g_idx, or scales as wide as qweight, means GPTQ (not ours); scales
     * eight times as wide means AWQ; anything else cannot be told apart.
     */
    static boolean isAwqByShape(String p, TensorEntry qweight, Optional<TensorEntry> scales, boolean hasGIdx) {
        if (hasGIdx) return false;
        if (scales.isEmpty()) {
            throw MalformedFileException.inTensor(qweight.name(), "has no companion " + p + ".scales");
        }
        Shape q = qweight.shape();
        Shape s = scales.get().shape();
        if (q.rank() == 2 && s.rank() == 2) {
            if (s.dim(1) == q.dim(1)) return false;
            if (s.dim(1) == 8 * q.dim(1)) return true;
        }
        throw UnsupportedFeatureException.inTensor(qweight.name(), "cannot tell GPTQ from AWQ: no "
                + "quantization_config.quant_method in the metadata, config.json, quantize_config.json or "
                + "quant_config.json, and the shapes (qweight " + q + ", scales " + s + ") fit neither");
    }

    static Recovery recover(String p, TensorEntry qweight, Optional<TensorEntry> qzerosEntry,
                            Optional<TensorEntry> scalesEntry, Optional<QuantizationConfig> config,
                            ParseLimits limits) {
        String version = config.flatMap(c -> c.text("version")).orElse("gemm").toLowerCase(Locale.ROOT);
        if (!version.equals("gemm")) {
            throw UnsupportedFeatureException.inTensor(qweight.name(), "AWQ version '" + version
                    + "' is not supported: only the GEMM layout is recovered (GEMV packs differently)");
        }
        int bits = config.flatMap(c -> c.integer("w_bit", "bits")).orElse(4);
        if (bits != 4) {
            throw UnsupportedFeatureException.inTensor(qweight.name(), "AWQ with " + bits + " bits (only 4-bit GEMM is supported)");
        }
        TensorEntry qzeros = qzerosEntry.orElseThrow(() -> MalformedFileException.inTensor(qweight.name(),
                "has no companion " + p + ".qzeros"));
        TensorEntry scales = scalesEntry.orElseThrow(() -> MalformedFileException.inTensor(qweight.name(),
                "has no companion " + p + ".scales"));
        requireInt32(qweight);
        requireInt32(qzeros);
        requireRank(qweight, 2);
        requireRank(qzeros, 2);
        requireRank(scales, 2);
        DType st = scales.dtype();
        if (!st.equals(DType.F16) && !st.equals(DType.BF16) && !st.equals(DType.F32)) {
            throw UnsupportedFeatureException.inTensor(scales.name(), "AWQ scales in " + st + " (expected F16, BF16 or F32)");
        }
        long in = qweight.shape().dim(0);
        long words = qweight.shape().dim(1);
        long out = scales.shape().dim(1);
        long groups = scales.shape().dim(0);
        if (out != 8 * words) {
            throw MalformedFileException.inTensor(scales.name(), "has " + out + " columns; AWQ GEMM qweight "
                    + qweight.shape() + " packs " + 8 * words + " output features");
        }
        if (qzeros.shape().dim(0) != groups || qzeros.shape().dim(1) != words) {
            throw MalformedFileException.inTensor(qzeros.name(), "has shape " + qzeros.shape() + ", expected ["
                    + groups + ", " + words + "] from scales " + scales.shape() + " and qweight " + qweight.shape());
        }
        if (in > Integer.MAX_VALUE / 2 || out > Integer.MAX_VALUE / 2 || groups > Integer.MAX_VALUE / 64) {
            throw UnsupportedFeatureException.inTensor(qweight.name(), "AWQ layer too large: in " + in + ", out " + out);
        }
        // the kernel keeps a group index per input row and a scale and zero per group and tile column
        ParseLimits.check("in_features of " + qweight.name(), in, limits.maxArrayLength());
        if (groups > Math.max(1, in)) {
            throw MalformedFileException.inTensor(scales.name(), "has " + groups + " groups for " + in + " inputs");
        }
        if (groups < 1 && in > 0) throw MalformedFileException.inTensor(scales.name(), "has no groups");

        Optional<Integer> configGroup = config.flatMap(c -> c.integer("q_group_size", "group_size"));
        int groupSize;
        if (configGroup.isPresent()) {
            groupSize = configGroup.get();
            if (groupSize == 0 || groupSize < -1) {
                throw MalformedFileException.inTensor(qweight.name(), "AWQ group size " + groupSize);
            }
            if (groupSize == -1) groupSize = (int) Math.max(1, in);
            long expected = (in + groupSize - 1) / groupSize;
            if (groups != expected && !(in == 0 && groups <= 1)) {
                throw MalformedFileException.inTensor(scales.name(), "has " + groups + " groups; " + in
                        + " inputs in groups of " + groupSize + " need " + expected);
            }
        } else if (groups > 0 && in % groups == 0) {
            groupSize = (int) Math.max(1, in / groups);
        } else {
            throw UnsupportedFeatureException.inTensor(qweight.name(), "AWQ group size unknown: no "
                    + "quantization_config.q_group_size/group_size and " + in + " inputs do not split evenly into "
                    + groups + " groups");
        }

        var layout = new AwqKernel.Layout((int) in, (int) out, groupSize, (int) groups, st);
        boolean zeroPoint = config.flatMap(c -> c.bool("zero_point")).orElse(true);
        String description = "AWQ GEMM 4-bit, group " + groupSize + (zeroPoint ? ", zero point" : ", no zero point");
        Map<String, Role> inputs = new LinkedHashMap<>();
        inputs.put(qweight.name(), Role.QUANTIZED);
        inputs.put(scales.name(), Role.SCALE);
        inputs.put(qzeros.name(), Role.ZERO_POINT);
        return new Recovery(p + ".weight", Shape.of(out, in), "awq", description, inputs,
                new AwqKernel.Kernel(qweight, qzeros, scales, layout));
    }

    private static void requireInt32(TensorEntry e) {
        if (!e.dtype().equals(DType.I32) && !e.dtype().equals(DType.U32)) {
            throw MalformedFileException.inTensor(e.name(), "is " + e.dtype() + "; AWQ packs into I32");
        }
    }

    private static void requireRank(TensorEntry e, int rank) {
        if (e.shape().rank() != rank) {
            throw MalformedFileException.inTensor(e.name(), "has shape " + e.shape() + ", expected rank " + rank);
        }
    }
}
