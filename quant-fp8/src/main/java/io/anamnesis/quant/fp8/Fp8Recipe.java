package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;
import io.anamnesis.api.InvalidRequestException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.config.QuantizationConfig;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.json.Json;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
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
 * dtype says the format (and, for E4M3FNUZ, the codes which of two conventions made them),
 * its scale companion's name, dtype and shape say the scale's storage and granularity, the
 * quantization config the block size.
 *
 * @param target             what is written: fp8, fp8_e5m2, fp8_e4m3fnuz, fp8_e5m2fnuz or fp8_e4m3fnuz_vllm
 * @param uniform            every linear layer's spec, from the settings; empty when imitating
 * @param perTensor          each FP8 weight of the reference, by name
 * @param quantizationConfig the reference's {@code quantization_config}, JSON
 * @param reference          where the recipe came from, for messages
 */
record Fp8Recipe(Fp8Target target, Optional<Spec> uniform, Map<String, Spec> perTensor, Optional<String> quantizationConfig,
                 String reference) {

    enum Granularity { TENSOR, CHANNEL, BLOCK }

    /**
     * One weight's encoding.
     *
     * @param target      the format and how it is encoded
     * @param granularity one scale for the tensor, per output row, or per block
     * @param blockRows   block height (block granularity)
     * @param blockCols   block width (block granularity)
     * @param scaleDtype  BF16, F16 or F32
     * @param scaleSuffix {@code weight_scale_inv} (block, DeepSeek/Qwen) or {@code weight_scale}
     * @param scaleShape  the scale's shape as the reference stores it (a per-tensor scale may be {@code []} or {@code [1]})
     * @param shape       the weight's shape in the reference
     */
    record Spec(Fp8Target target, Granularity granularity, long blockRows, long blockCols, DType scaleDtype,
                String scaleSuffix, Optional<Shape> scaleShape, Optional<Shape> shape) {
        /** The format stored. */
        Fp8Format format() {
            return target.format();
        }

        String describe() {
            String convention = target == Fp8Target.FP8_E4M3FNUZ_VLLM ? " (vLLM's, from E4M3)" : "";
            return "FP8 " + format() + convention + ", " + switch (granularity) {
                case TENSOR -> "per-tensor scale";
                case CHANNEL -> "per-channel scales";
                case BLOCK -> blockRows + "x" + blockCols + " block scales";
            } + " (" + scaleDtype + " " + scaleSuffix + ")";
        }
    }

    static final String SCALE = "weight_scale";
    static final String SCALE_INV = "weight_scale_inv";

    /** The settings of {@code amn forget --to <an Fp8Target>}. */
    static Fp8Recipe fromSettings(String targetName, Map<String, String> settings) {
        Map<String, String> s = new LinkedHashMap<>(settings);
        Fp8Target target = Fp8Target.named(targetName)
                .orElseThrow(() -> new IllegalArgumentException("not an FP8 target: " + targetName));
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
        Spec spec = new Spec(target, granularity, block, block, scaleDtype,
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

    /** An FP8 weight of a reference and its scale companion. */
    private record Scaled(TensorEntry weight, Fp8Format format, TensorEntry scale, String prefix) {
    }

    /** Every FP8 {@code *.weight} of the reference with a scale companion, in file order. */
    private static List<Scaled> scaled(TensorArchive reference) {
        Map<String, TensorEntry> byName = byName(reference);
        List<Scaled> out = new ArrayList<>();
        for (TensorEntry w : reference.tensors()) {
            if (!w.name().endsWith(Fp8Dequantizer.WEIGHT)) continue;
            Optional<Fp8Format> f = Fp8Format.of(w.dtype());
            if (f.isEmpty()) continue;
            String prefix = w.name().substring(0, w.name().length() - Fp8Dequantizer.WEIGHT.length());
            TensorEntry scale = byName.get(prefix + Fp8Dequantizer.SCALE);
            if (scale == null) scale = byName.get(prefix + Fp8Dequantizer.SCALE_INV);
            if (scale != null) out.add(new Scaled(w, f.get(), scale, prefix));
        }
        return out;
    }

    /**
     * The target of a reference's first scaled FP8 weight: its format's, and for E4M3FNUZ the
     * convention its codes show ({@link #fnuzConvention}).
     */
    static Optional<String> targetOf(TensorArchive reference) {
        List<Scaled> scaled = scaled(reference);
        if (scaled.isEmpty()) return Optional.empty();
        return Optional.of(target(reference, scaled.getFirst().format(), scaled).targetName());
    }

    /** The target that writes {@code format} as the reference's weights of it are written. */
    private static Fp8Target target(TensorArchive reference, Fp8Format format, List<Scaled> scaled) {
        return format == Fp8Format.E4M3FNUZ ? fnuzConvention(reference, scaled) : Fp8Target.nativeOf(format);
    }

    /**
     * Which of the two E4M3FNUZ conventions a reference follows, which only its codes say: a
     * native scale group takes code magnitude {@code 0x7F} (240) for its largest value, vLLM's
     * normalized one stops at {@code 0x7E} (224, E4M3's 448 halved). The reference's E4M3FNUZ
     * weights are read in file order until one decides: a {@code 0x7F} in it means native, a
     * {@code 0x7E} without any {@code 0x7F} normalized; a weight of smaller codes only (all
     * zero, or scales clamped at their dtype's smallest value) says nothing, and if none
     * decides, native, the default of {@code --to}.
     *
     * <p>Limits: one weight decides for the whole reference (a file that mixes both is read
     * as its first deciding weight says), and that weight is read whole when it is of the
     * normalized kind. vLLM's own path turns an E4M3 NaN ({@code 0x7F}/{@code 0xFF}) into
     * +-240, so a normalized checkpoint whose weights held a NaN reads as native.
     */
    private static Fp8Target fnuzConvention(TensorArchive reference, List<Scaled> scaled) {
        try (Arena arena = Arena.ofConfined()) {
            for (Scaled s : scaled) {
                if (s.format() != Fp8Format.E4M3FNUZ) continue;
                int largest = largestMagnitude(reference.data(s.weight(), arena));
                if (largest == 0x7F) return Fp8Target.FP8_E4M3FNUZ;
                if (largest == 0x7E) return Fp8Target.FP8_E4M3FNUZ_VLLM;
            }
        }
        return Fp8Target.FP8_E4M3FNUZ;
    }

    /** The largest {@code code & 0x7F} of the bytes, stopping at the first 0x7F. */
    private static int largestMagnitude(MemorySegment codes) {
        long n = codes.byteSize();
        long i = 0;
        boolean seen7E = false;
        // eight codes at a time: a byte's low 7 bits plus 1 (or 2) reach bit 7 only for 0x7F (or 0x7E and 0x7F)
        for (; i + 8 <= n; i += 8) {
            long low = codes.get(ValueLayout.JAVA_LONG_UNALIGNED, i) & 0x7F7F_7F7F_7F7F_7F7FL;
            if (((low + 0x0101_0101_0101_0101L) & 0x8080_8080_8080_8080L) != 0) return 0x7F;
            seen7E |= ((low + 0x0202_0202_0202_0202L) & 0x8080_8080_8080_8080L) != 0;
        }
        int largest = seen7E ? 0x7E : 0;
        for (; i < n; i++) largest = Math.max(largest, codes.get(ValueLayout.JAVA_BYTE, i) & 0x7F);
        return largest;
    }

    /**
     * Reads the recipe of an FP8 checkpoint: every FP8 {@code *.weight} with a scale companion.
     *
     * @throws UnsupportedFeatureException for weights of two formats in one file
     * @throws MalformedFileException      for a scale whose shape fits no layout
     */
    static Fp8Recipe read(TensorArchive reference, ParseLimits limits) {
        String name = reference.path().map(p -> p.getFileName().toString()).orElse("the reference");
        ClaimContext context = new ClaimContext(reference, limits);
        Supplier<Fp8Config> config = new Supplier<>() {
            private Fp8Config found;

            @Override
            public Fp8Config get() {
                if (found == null) found = Fp8Config.find(context);
                return found;
            }
        };
        List<Scaled> scaled = scaled(reference);
        if (scaled.isEmpty()) throw new UnsupportedFeatureException(name + " holds no scaled FP8 weight to imitate");
        Fp8Format format = scaled.getFirst().format();
        Fp8Target target = null;
        Map<String, Spec> perTensor = new LinkedHashMap<>();
        for (Scaled s : scaled) {
            TensorEntry w = s.weight();
            TensorEntry scale = s.scale();
            DType sd = scale.dtype();
            if (!sd.equals(DType.BF16) && !sd.equals(DType.F16) && !sd.equals(DType.F32)) {
                throw UnsupportedFeatureException.inTensor(scale.name(), "is " + sd + "; FP8 scales are BF16, F16 or F32");
            }
            if (s.format() != format) {
                throw new UnsupportedFeatureException(name + " mixes " + format.dtype() + " and " + s.format().dtype()
                        + " weights; forget --like writes one format");
            }
            if (target == null) target = target(reference, format, scaled);
            ScaleLayout layout = Fp8Dequantizer.layout(w, scale, config);
            Granularity g = switch (layout) {
                case ScaleLayout.PerTensor p -> Granularity.TENSOR;
                case ScaleLayout.PerChannel p -> Granularity.CHANNEL;
                case ScaleLayout.Block b -> Granularity.BLOCK;
            };
            long br = layout instanceof ScaleLayout.Block b ? b.rows() : 0;
            long bc = layout instanceof ScaleLayout.Block b ? b.cols() : 0;
            String suffix = scale.name().substring(s.prefix().length() + 1);
            perTensor.put(w.name(), new Spec(target, g, br, bc, sd, suffix, Optional.of(scale.shape()), Optional.of(w.shape())));
        }
        return new Fp8Recipe(target, Optional.empty(), perTensor, quantizationConfig(reference, context), name);
    }

    /** The reference's quantization config: its metadata entry as it is, else config.json's, rewritten. */
    private static Optional<String> quantizationConfig(TensorArchive reference, ClaimContext context) {
        String inMetadata = reference.metadata().get("quantization_config");
        if (inMetadata != null) return Optional.of(checkedConfig(inMetadata, context.limits().maxNestingDepth()));
        Optional<String> config = context.sidecar("config.json");
        if (config.isEmpty()) return Optional.empty();
        Object root;
        try {
            root = Json.parse(config.get(), context.limits().maxNestingDepth());
        } catch (IllegalArgumentException e) {
            throw new MalformedFileException("config.json beside the reference: " + e.getMessage());
        }
        return Json.member(root, "quantization_config").filter(q -> q instanceof Map<?, ?>)
                .map(q -> checkedConfig(Json.dumps(Json.wholeNumbersAsLongs(q)), context.limits().maxNestingDepth()));
    }

    /** The reference's {@code quantization_config}, checked ({@link QuantizationConfig#checkedForCopy}). */
    static String checkedConfig(String text, int maxNesting) {
        return QuantizationConfig.checkedForCopy(text, maxNesting, m -> !OTHER_METHODS.contains(m), "FP8");
    }

    /** quant_method values of other schemes (FP8 checkpoints say fp8, fbgemm_fp8 or compressed-tensors). */
    private static final java.util.Set<String> OTHER_METHODS = java.util.Set.of("gptq", "awq", "bitsandbytes", "hqq", "aqlm",
            "exl2", "mxfp4");

    private static Map<String, TensorEntry> byName(TensorArchive archive) {
        Map<String, TensorEntry> m = new HashMap<>();
        for (TensorEntry e : archive.tensors()) m.putIfAbsent(e.name(), e);
        return m;
    }
}
