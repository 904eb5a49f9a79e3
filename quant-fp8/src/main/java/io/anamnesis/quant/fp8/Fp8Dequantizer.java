package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.Role;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.config.QuantizationConfig;
import io.anamnesis.api.spi.Recovery;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Recovers FP8 weights as checkpoints ship them: {@code <p>.weight} in {@code F8_E4M3}
 * ({@code float8_e4m3fn}), {@code F8_E5M2}, or AMD's {@code F8_E4M3FNUZ} /
 * {@code F8_E5M2FNUZ}, scaled by {@code <p>.weight_scale} or
 * {@code <p>.weight_scale_inv}. Both names mean multiply (DeepSeek-V3 and Qwen3 call the
 * multiplier "scale_inv" because it inverts the quantizer's division). The scale's shape
 * says its granularity: {@code []} or {@code [1]} per tensor, {@code [rows, 1]} per output
 * channel, {@code [ceil(rows/bh), ceil(cols/bw)]} per {@code bh x bw} block (128 x 128 unless
 * the quantization config says otherwise). Scales are BF16, F16 or F32.
 *
 * <p>An FP8 tensor without a scale companion, activation scales ({@code input_scale}) and
 * everything else are left alone and pass through.
 *
 * <p>A checkpoint whose quantization config says {@code compressed-tensors} is left whole to
 * that scheme's module: its FP8 layers ({@code float-quantized}) look like these, but only
 * the config's groups, targets and ignore list say which tensors it quantized and how.
 */
public final class Fp8Dequantizer implements Dequantizer {
    static final String WEIGHT = ".weight";
    static final String SCALE = ".weight_scale";
    static final String SCALE_INV = ".weight_scale_inv";
    /** The quant_method of checkpoints this module leaves to their own module. */
    static final String COMPRESSED_TENSORS = "compressed-tensors";

    @Override
    public String scheme() {
        return "fp8";
    }

    @Override
    public String description() {
        return "FP8 E4M3/E5M2 (and FNUZ) weights with per-tensor, per-channel or block scales (weight_scale, weight_scale_inv)";
    }

    @Override
    public List<Recovery> claim(ClaimContext context) {
        List<TensorEntry> tensors = context.archive().tensors();
        Map<String, TensorEntry> byName = new HashMap<>();
        for (TensorEntry e : tensors) byName.putIfAbsent(e.name(), e);
        Supplier<Fp8Config> config = new Supplier<>() {
            private Fp8Config found;

            @Override
            public Fp8Config get() {
                if (found == null) found = Fp8Config.find(context);
                return found;
            }
        };

        List<Recovery> out = new ArrayList<>();
        for (TensorEntry weight : tensors) {
            if (!weight.name().endsWith(WEIGHT)) continue;
            Optional<Fp8Format> format = Fp8Format.of(weight.dtype());
            if (format.isEmpty()) continue;
            String prefix = weight.name().substring(0, weight.name().length() - WEIGHT.length());
            TensorEntry scale = byName.get(prefix + SCALE);
            TensorEntry scaleInv = byName.get(prefix + SCALE_INV);
            if (scale != null && scaleInv != null) {
                throw UnsupportedFeatureException.inTensor(weight.name(), "has both " + scale.name() + " and "
                        + scaleInv.name() + "; which one scales it is ambiguous");
            }
            TensorEntry s = scale != null ? scale : scaleInv;
            if (s == null) continue;
            // read the config only for a file with FP8 weights, as before this check existed
            if (out.isEmpty() && QuantizationConfig.find(context).flatMap(QuantizationConfig::quantMethod)
                    .orElse("").equals(COMPRESSED_TENSORS)) {
                return List.of();
            }
            out.add(group(weight, format.get(), s, config));
        }
        return out;
    }

    private static Recovery group(TensorEntry weight, Fp8Format format, TensorEntry scale,
                                  Supplier<Fp8Config> config) {
        DType sd = scale.dtype();
        if (!sd.equals(DType.BF16) && !sd.equals(DType.F16) && !sd.equals(DType.F32)) {
            throw UnsupportedFeatureException.inTensor(scale.name(), "scale of FP8 weight " + weight.name()
                    + " is " + sd + "; FP8 scales are BF16, F16 or F32");
        }
        ScaleLayout layout = layout(weight, scale, config);
        Map<String, Role> inputs = new LinkedHashMap<>();
        inputs.put(weight.name(), Role.QUANTIZED);
        inputs.put(scale.name(), Role.SCALE);
        String description = "FP8 " + format.name() + ", " + layout.describe() + " (" + sd + ")";
        return new Recovery(weight.name(), weight.shape(), "fp8", description, inputs,
                new Fp8GroupKernel(weight, scale, format, layout));
    }

    /** The granularity the scale's shape implies, or a typed error naming the scale. */
    static ScaleLayout layout(TensorEntry weight, TensorEntry scale, Supplier<Fp8Config> config) {
        Shape s = scale.shape();
        if (s.rank() == 0 || (s.rank() == 1 && s.dim(0) == 1)) return new ScaleLayout.PerTensor();
        Shape w = weight.shape();
        String expected = "[] or [1] per tensor";
        if (w.rank() == 2) {
            long rows = w.dim(0);
            long cols = w.dim(1);
            if (s.equals(Shape.of(rows, 1))) return new ScaleLayout.PerChannel();
            expected += ", [" + rows + ", 1] per channel";
            if (s.rank() == 2) {
                Fp8Config c = config.get();
                ScaleLayout.Block b = c.block();
                long blockRows = ceilDiv(rows, b.rows());
                long blockCols = ceilDiv(cols, b.cols());
                if (s.equals(Shape.of(blockRows, blockCols))) return b;
                expected += " or [" + blockRows + ", " + blockCols + "] for " + b.describe() + " (" + c.source() + ")";
            }
        } else {
            expected += " (per-channel and block scales need a 2-D weight)";
        }
        throw MalformedFileException.inTensor(scale.name(), "shape " + s + " fits no FP8 scale layout of weight "
                + weight.name() + " " + w + ": expected " + expected);
    }

    private static long ceilDiv(long a, long b) {
        return a / b + (a % b == 0 ? 0 : 1);
    }
}
