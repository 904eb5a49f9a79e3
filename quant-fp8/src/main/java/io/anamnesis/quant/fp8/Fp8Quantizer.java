package io.anamnesis.quant.fp8;

import io.anamnesis.api.InvalidRequestException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.RecoveryPlan;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.ForgetPlan;
import io.anamnesis.api.spi.ForgetRequest;
import io.anamnesis.api.json.Json;
import io.anamnesis.api.spi.LinearWeights;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.Quantizer;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * Quantizes to FP8 ("forget"): E4M3 ({@code fp8}), E5M2 ({@code fp8_e5m2}), or AMD ROCm's
 * E4M3FNUZ ({@code fp8_e4m3fnuz}, or {@code fp8_e4m3fnuz_vllm} as vLLM makes it from E4M3:
 * see {@link Fp8Target}) and E5M2FNUZ ({@code fp8_e5m2fnuz}) weights with
 * one scale per tensor, per output channel or per 128x128 block, the layouts transformers
 * and vLLM load: block scales as {@code weight_scale_inv} (DeepSeek-V3, Qwen3 FP8), tensor and
 * channel scales as {@code weight_scale}, in F32 unless {@code --scale-dtype} says BF16 or F16.
 *
 * <p>The {@code quantization_config} is what the loaders read: {@code {"quant_method": "fp8",
 * "activation_scheme": "dynamic", "weight_block_size": [128, 128]}} for blocks (transformers'
 * FineGrainedFP8Config, vLLM's Fp8Config), the same without the block size for a per-tensor
 * scale (vLLM), and a compressed-tensors {@code float-quantized} channel group for per-channel
 * E4M3 (what llm-compressor writes and both load); {@code fmt} names the format
 * ({@code e4m3}, {@code e5m2}, {@code e4m3fnuz}, {@code e5m2fnuz}), and the other formats'
 * per-channel scales get the {@code fp8} config too (compressed-tensors' float type is E4M3).
 *
 * <p>Which tensors: the weights of linear layers ({@link LinearWeights}); with {@code --like},
 * exactly the reference's FP8 weights, each with its own layout.
 */
public final class Fp8Quantizer implements Quantizer {

    @Override
    public String scheme() {
        return "fp8";
    }

    @Override
    public String description() {
        return "FP8 E4M3/E5M2 (and ROCm's E4M3FNUZ/E5M2FNUZ) weights with per-tensor, per-channel or 128x128 block scales,"
                + " as transformers and vLLM load them";
    }

    @Override
    public String format() {
        return "safetensors";
    }

    @Override
    public SequencedMap<String, String> targets() {
        SequencedMap<String, String> m = new LinkedHashMap<>();
        for (Fp8Target t : Fp8Target.values()) m.put(t.targetName(), t.description());
        return m;
    }

    @Override
    public Optional<String> imitates(TensorArchive reference) {
        return Fp8Recipe.targetOf(reference);
    }

    @Override
    public ForgetPlan plan(ForgetRequest request) {
        if (request.options().importance().isPresent()) {
            throw new InvalidRequestException("FP8 quantization does not weight by an importance matrix (--imatrix)");
        }
        boolean like = request.options().like().isPresent();
        Fp8Recipe recipe = like ? Fp8Recipe.read(request.options().like().get(), ParseLimits.defaults())
                : Fp8Recipe.fromSettings(request.target(), request.options().settings());
        if (!recipe.target().targetName().equals(request.target())) {
            throw new UnsupportedFeatureException(recipe.reference() + " is quantized to " + recipe.target().targetName()
                    + ", not " + request.target());
        }
        List<PlannedTensor> out = new ArrayList<>();
        List<ForgetPlan.Decision> decisions = new ArrayList<>();
        List<String> skipped = new ArrayList<>();
        int matched = 0;
        for (DenseTensor t : request.tensors()) {
            Optional<Fp8Recipe.Spec> spec;
            String why;
            if (!like) {
                Optional<String> kept = LinearWeights.whyKept(t);
                spec = kept.isPresent() ? Optional.empty() : recipe.uniform();
                why = kept.orElse("linear layer");
                if (kept.isPresent() && t.isNumeric() && t.shape().rank() == 2 && t.name().endsWith(".weight")
                        && !why.equals("embeddings stay") && !why.equals("lm_head stays")) {
                    skipped.add(LinearWeights.module(t.name()));
                }
            } else {
                spec = Optional.ofNullable(recipe.perTensor().get(t.name()));
                if (spec.isPresent()) matched++;
                why = spec.isPresent() ? "as in " + recipe.reference() : "not quantized in " + recipe.reference();
                if (spec.isPresent() && t.keep()) {
                    spec = Optional.empty();
                    why = "--keep";
                    skipped.add(LinearWeights.module(t.name()));
                }
            }
            if (spec.isEmpty()) {
                out.add(t.asStored());
                decisions.add(new ForgetPlan.Decision(t.name(), t.asStored().dtype().name(), false, why));
                continue;
            }
            check(t, spec.get(), recipe, like);
            request.loss().expect(t.name());
            out.addAll(Fp8Tensors.plan(t, spec.get(), request.loss()));
            decisions.add(new ForgetPlan.Decision(t.name(), request.target(), true, why));
        }
        if (like && matched == 0) {
            throw new UnsupportedFeatureException("the input has none of the " + recipe.perTensor().size() + " FP8 weights "
                    + recipe.reference() + " holds (e.g. " + recipe.perTensor().keySet().iterator().next() + ")");
        }
        return new ForgetPlan(out, metadata(request, recipe, skipped), Map.of(), decisions);
    }

    /**
     * A weight must be a float matrix, of the reference's shape when imitating; 128x128 blocks
     * must tile it (transformers' and vLLM's block kernels need whole blocks), unless the
     * reference itself has partial edge blocks.
     */
    private static void check(DenseTensor t, Fp8Recipe.Spec spec, Fp8Recipe recipe, boolean like) {
        if (!t.isNumeric()) {
            throw UnsupportedFeatureException.inTensor(t.name(), "is " + t.storedDType() + "; FP8 quantizes float tensors");
        }
        if (spec.shape().isPresent() && !spec.shape().get().equals(t.shape())) {
            throw UnsupportedFeatureException.inTensor(t.name(), "is " + t.shape() + " but " + recipe.reference()
                    + " stores it as " + spec.shape().get() + "; --like needs the same shapes");
        }
        if (t.shape().rank() != 2) {
            throw UnsupportedFeatureException.inTensor(t.name(), "is " + t.shape() + "; FP8 scales cover 2-D weights");
        }
        if (spec.granularity() == Fp8Recipe.Granularity.BLOCK && !like
                && (t.shape().dim(0) % spec.blockRows() != 0 || t.shape().dim(1) % spec.blockCols() != 0)) {
            throw UnsupportedFeatureException.inTensor(t.name(), "is " + t.shape() + ", which " + spec.blockRows() + "x"
                    + spec.blockCols() + " blocks do not tile; keep it (--keep), or use --granularity channel");
        }
    }

    /**
     * The input's metadata without its old quantization keys, {@code format: pt}, and the
     * quantization config: the reference's as it is, else the one the layout's loaders read.
     */
    private static Map<String, String> metadata(ForgetRequest request, Fp8Recipe recipe, List<String> skipped) {
        Map<String, String> m = new LinkedHashMap<>(request.source().metadata());
        m.remove("quantization_config");
        m.remove("quant_config");
        m.remove(RecoveryPlan.RECOVERED_FROM_KEY);
        m.putIfAbsent("format", "pt");
        m.put("quantization_config", recipe.quantizationConfig().orElseGet(() -> {
            Fp8Recipe.Spec spec = recipe.uniform().orElseGet(() -> recipe.perTensor().values().iterator().next());
            return Json.dumps(config(spec, skipped));
        }));
        return m;
    }

    static Map<String, Object> config(Fp8Recipe.Spec spec, List<String> skipped) {
        Map<String, Object> c = new LinkedHashMap<>();
        if (spec.granularity() == Fp8Recipe.Granularity.CHANNEL && spec.format() == Fp8Format.E4M3) {
            // compressed-tensors, as llm-compressor's FP8_DYNAMIC scheme writes it
            Map<String, Object> weights = new LinkedHashMap<>();
            weights.put("num_bits", 8);
            weights.put("type", "float");
            weights.put("symmetric", true);
            weights.put("strategy", "channel");
            weights.put("dynamic", false);
            weights.put("group_size", null);
            weights.put("block_structure", null);
            weights.put("actorder", null);
            weights.put("observer", "minmax");
            Map<String, Object> inputs = new LinkedHashMap<>();
            inputs.put("num_bits", 8);
            inputs.put("type", "float");
            inputs.put("symmetric", true);
            inputs.put("strategy", "token");
            inputs.put("dynamic", true);
            inputs.put("group_size", null);
            inputs.put("block_structure", null);
            inputs.put("actorder", null);
            inputs.put("observer", null);
            Map<String, Object> group = new LinkedHashMap<>();
            group.put("targets", List.of("Linear"));
            group.put("weights", weights);
            group.put("input_activations", inputs);
            group.put("output_activations", null);
            c.put("config_groups", Map.of("group_0", group));
            c.put("format", "float-quantized");
            List<Object> ignore = new ArrayList<>(List.of("lm_head"));
            ignore.addAll(skipped);
            c.put("ignore", ignore);
            c.put("kv_cache_scheme", null);
            c.put("quant_method", "compressed-tensors");
            c.put("quantization_status", "compressed");
            return c;
        }
        c.put("activation_scheme", "dynamic");
        c.put("fmt", spec.format().name().toLowerCase(Locale.ROOT));
        c.put("quant_method", "fp8");
        if (spec.granularity() == Fp8Recipe.Granularity.BLOCK) {
            c.put("weight_block_size", List.of(spec.blockRows(), spec.blockCols()));
        }
        if (!skipped.isEmpty()) {
            // transformers reads modules_to_not_convert, vLLM ignored_layers
            c.put("modules_to_not_convert", List.copyOf(skipped));
            c.put("ignored_layers", List.copyOf(skipped));
        }
        return c;
    }
}
