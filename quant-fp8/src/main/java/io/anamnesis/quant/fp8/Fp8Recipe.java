package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;
import io.anamnesis.api.InvalidRequestException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.json.Json;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * How to quantize to FP8, per tensor: from the command line's settings (every linear layer the
 * same way) or read from a published FP8 checkpoint ({@code forget --like}): each FP8 weight's
 * dtype says the format, its scale companion's name, dtype and shape say the scale's
 * storage and granularity, the quantization config the block size.
 *
 * @param target             fp8 or fp8_e5m2
 * @param uniform            every linear layer's spec, from the settings; empty when imitating
 * @param perTensor          each FP8 weight of the reference, by name
 * @param quantizationConfig the reference's {@code quantization_config}, JSON
 * @param reference          where the recipe came from, for messages
 */
record Fp8Recipe(String target, Optional<Spec> uniform, Map<String, Spec> perTensor, Optional<String> quantizationConfig,
                 String reference) {

    enum Granularity { TENSOR, CHANNEL, BLOCK }

    /**
     * One weight's encoding.
     *
     * @param format      E4M3 or E5M2
     * @param granularity one scale for the tensor, per output row, or per block
     * @param blockRows   block height (block granularity)
     * @param blockCols   block width (block granularity)
     * @param scaleDtype  BF16, F16 or F32
     * @param scaleSuffix {@code weight_scale_inv} (block, DeepSeek/Qwen) or {@code weight_scale}
     * @param scaleShape  the scale's shape as the reference stores it (a per-tensor scale may be {@code []} or {@code [1]})
     * @param shape       the weight's shape in the reference
     */
    record Spec(Fp8Format format, Granularity granularity, long blockRows, long blockCols, DType scaleDtype,
                String scaleSuffix, Optional<Shape> scaleShape, Optional<Shape> shape) {
        String describe() {
            return "FP8 " + format + ", " + switch (granularity) {
                case TENSOR -> "per-tensor scale";
                case CHANNEL -> "per-channel scales";
                case BLOCK -> blockRows + "x" + blockCols + " block scales";
            } + " (" + scaleDtype + " " + scaleSuffix + ")";
        }
    }

    static final String SCALE = "weight_scale";
    static final String SCALE_INV = "weight_scale_inv";

    /** The settings of {@code amn forget --to fp8|fp8_e5m2}. */
    static Fp8Recipe fromSettings(String target, Map<String, String> settings) {
        Map<String, String> s = new LinkedHashMap<>(settings);
        Fp8Format format = target.equals("fp8_e5m2") ? Fp8Format.E5M2 : Fp8Format.E4M3;
        String g = s.remove("granularity");
        Granularity granularity = g == null ? Granularity.BLOCK : switch (g.toLowerCase(Locale.ROOT)) {
            case "tensor" -> Granularity.TENSOR;
            case "channel" -> Granularity.CHANNEL;
            case "block" -> Granularity.BLOCK;
            default -> throw new InvalidRequestException("granularity '" + g + "': FP8 scales are per tensor, channel or block");
        };
        long block = 128;
        String bs = s.remove("block-size");
        if (bs != null) {
            if (granularity != Granularity.BLOCK) {
                throw new InvalidRequestException("--block-size is for --granularity block, not " + g);
            }
            block = blockSize(bs);
        }
        String sd = s.remove("scale-dtype");
        DType scaleDtype = sd == null ? DType.F32 : switch (sd.toLowerCase(Locale.ROOT)) {
            case "f32", "fp32", "float32" -> DType.F32;
            case "bf16", "bfloat16" -> DType.BF16;
            case "f16", "fp16", "float16" -> DType.F16;
            default -> throw new InvalidRequestException("scale dtype '" + sd + "': FP8 scales are stored as bf16, f16 or f32");
        };
        for (String key : s.keySet()) {
            throw new InvalidRequestException("FP8 takes --granularity, --block-size and --scale-dtype, not --" + key);
        }
        Spec spec = new Spec(format, granularity, block, block, scaleDtype,
                granularity == Granularity.BLOCK ? SCALE_INV : SCALE, Optional.empty(), Optional.empty());
        return new Fp8Recipe(target, Optional.of(spec), Map.of(), Optional.empty(), "the settings");
    }

    /** A block side: a power of two from 16 to 4096 (128, as DeepSeek-V3 and Qwen3 use, unless given). */
    static long blockSize(String text) {
        long v;
        try {
            v = Long.parseLong(text.trim());
        } catch (NumberFormatException e) {
            throw new InvalidRequestException("block size '" + text + "' is not a number");
        }
        if (v < 16 || v > 4096 || Long.bitCount(v) != 1) {
            throw new InvalidRequestException("block size " + v + " is not one FP8 block scales take here: a power of two"
                    + " from 16 to 4096 (square blocks; 128 unless given)");
        }
        return v;
    }

    /**
     * The target of a reference's first scaled FP8 weight: fp8 (E4M3) or fp8_e5m2. The FNUZ
     * formats (ROCm) are read but not written, so a reference of them has nothing to imitate.
     */
    static Optional<String> targetOf(TensorArchive reference) {
        Map<String, TensorEntry> byName = byName(reference);
        for (TensorEntry w : reference.tensors()) {
            if (!w.name().endsWith(Fp8Dequantizer.WEIGHT)) continue;
            Optional<Fp8Format> f = Fp8Format.of(w.dtype()).filter(Fp8Recipe::written);
            if (f.isEmpty()) continue;
            String prefix = w.name().substring(0, w.name().length() - Fp8Dequantizer.WEIGHT.length());
            if (byName.containsKey(prefix + Fp8Dequantizer.SCALE) || byName.containsKey(prefix + Fp8Dequantizer.SCALE_INV)) {
                return Optional.of(f.get() == Fp8Format.E4M3 ? "fp8" : "fp8_e5m2");
            }
        }
        return Optional.empty();
    }

    /**
     * Reads the recipe of an FP8 checkpoint: every FP8 {@code *.weight} with a scale companion.
     *
     * @throws UnsupportedFeatureException for E4M3 and E5M2 weights in one file
     * @throws MalformedFileException      for a scale whose shape fits no layout
     */
    static Fp8Recipe read(TensorArchive reference, ParseLimits limits) {
        String name = reference.path().map(p -> p.getFileName().toString()).orElse("the reference");
        Map<String, TensorEntry> byName = byName(reference);
        ClaimContext context = new ClaimContext(reference, limits);
        Supplier<Fp8Config> config = new Supplier<>() {
            private Fp8Config found;

            @Override
            public Fp8Config get() {
                if (found == null) found = Fp8Config.find(context);
                return found;
            }
        };
        Map<String, Spec> perTensor = new LinkedHashMap<>();
        Fp8Format format = null;
        for (TensorEntry w : reference.tensors()) {
            if (!w.name().endsWith(Fp8Dequantizer.WEIGHT)) continue;
            Optional<Fp8Format> f = Fp8Format.of(w.dtype());
            if (f.isEmpty()) continue;
            String prefix = w.name().substring(0, w.name().length() - Fp8Dequantizer.WEIGHT.length());
            TensorEntry scale = byName.get(prefix + Fp8Dequantizer.SCALE);
            if (scale == null) scale = byName.get(prefix + Fp8Dequantizer.SCALE_INV);
            if (scale == null) continue;
            if (!written(f.get())) {
                throw UnsupportedFeatureException.inTensor(w.name(), "is " + w.dtype()
                        + "; forget writes FP8 E4M3 and E5M2, not the FNUZ formats");
            }
            DType sd = scale.dtype();
            if (!sd.equals(DType.BF16) && !sd.equals(DType.F16) && !sd.equals(DType.F32)) {
                throw UnsupportedFeatureException.inTensor(scale.name(), "is " + sd + "; FP8 scales are BF16, F16 or F32");
            }
            if (format == null) format = f.get();
            else if (format != f.get()) {
                throw new UnsupportedFeatureException(name + " mixes E4M3 and E5M2 weights; forget --like writes one format");
            }
            ScaleLayout layout = Fp8Dequantizer.layout(w, scale, config);
            Granularity g = switch (layout) {
                case ScaleLayout.PerTensor p -> Granularity.TENSOR;
                case ScaleLayout.PerChannel p -> Granularity.CHANNEL;
                case ScaleLayout.Block b -> Granularity.BLOCK;
            };
            long br = layout instanceof ScaleLayout.Block b ? b.rows() : 0;
            long bc = layout instanceof ScaleLayout.Block b ? b.cols() : 0;
            String suffix = scale.name().substring(prefix.length() + 1);
            perTensor.put(w.name(), new Spec(f.get(), g, br, bc, sd, suffix, Optional.of(scale.shape()), Optional.of(w.shape())));
        }
        if (format == null) throw new UnsupportedFeatureException(name + " holds no scaled FP8 weight to imitate");
        return new Fp8Recipe(format == Fp8Format.E4M3 ? "fp8" : "fp8_e5m2", Optional.empty(), perTensor,
                quantizationConfig(reference, context), name);
    }

    /** The reference's quantization config: its metadata entry as it is, else config.json's, rewritten. */
    private static Optional<String> quantizationConfig(TensorArchive reference, ClaimContext context) {
        String inMetadata = reference.metadata().get("quantization_config");
        if (inMetadata != null) return Optional.of(inMetadata);
        Optional<String> config = context.sidecar("config.json");
        if (config.isEmpty()) return Optional.empty();
        Object root;
        try {
            root = Json.parse(config.get(), context.limits().maxNestingDepth());
        } catch (IllegalArgumentException e) {
            throw new MalformedFileException("config.json beside the reference: " + e.getMessage());
        }
        return Json.member(root, "quantization_config").filter(q -> q instanceof Map<?, ?>)
                .map(q -> Json.dumps(Json.wholeNumbersAsLongs(q)));
    }

    /** The formats the encoder writes. */
    static boolean written(Fp8Format f) {
        return f == Fp8Format.E4M3 || f == Fp8Format.E5M2;
    }

    private static Map<String, TensorEntry> byName(TensorArchive archive) {
        Map<String, TensorEntry> m = new HashMap<>();
        for (TensorEntry e : archive.tensors()) m.putIfAbsent(e.name(), e);
        return m;
    }
}
