package io.anamnesis.quant.bnb;

import io.anamnesis.api.DType;
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
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.TreeMap;

/**
 * Quantizes to bitsandbytes ("forget"): NF4 and FP4 block-wise (optionally double-quantized)
 * and LLM.int8() row-wise, written as {@code transformers} saves a bitsandbytes model, so that
 * it loads it back: the same tensor names, dtypes, shapes and packed quant states, and the
 * {@code quantization_config} (as {@code BitsAndBytesConfig.to_dict()}) in the metadata.
 *
 * <p>Which tensors: the weights of linear layers (see {@link LinearWeights}); embeddings,
 * norms, biases and {@code lm_head} stay as they are, as transformers leaves them. With
 * {@code --like}, exactly the tensors the reference quantizes, each the way it is there.
 */
public final class BnbQuantizer implements Quantizer {

    @Override
    public String scheme() {
        return "bnb";
    }

    @Override
    public String description() {
        return "bitsandbytes NF4 / FP4 (block-wise, double quantization) and LLM.int8(), as transformers saves them";
    }

    @Override
    public String format() {
        return "safetensors";
    }

    @Override
    public SequencedMap<String, String> targets() {
        SequencedMap<String, String> m = new LinkedHashMap<>();
        m.put("nf4", "bitsandbytes NF4, blocks of 64 (--block-size 32..4096), --double-quant");
        m.put("fp4", "bitsandbytes FP4, blocks of 64 (--block-size 32..4096), --double-quant");
        m.put("int8", "bitsandbytes LLM.int8(): int8 rows scaled by their absmax (SCB)");
        return m;
    }

    @Override
    public Optional<String> imitates(TensorArchive reference) {
        return BnbRecipe.typeOf(reference);
    }

    @Override
    public ForgetPlan plan(ForgetRequest request) {
        if (request.options().importance().isPresent()) {
            throw new InvalidRequestException("bitsandbytes quantization does not weight by an importance matrix (--imatrix)");
        }
        ParseLimits limits = ParseLimits.defaults();
        BnbRecipe recipe = request.options().like().isPresent()
                ? BnbRecipe.read(request.options().like().get(), limits)
                : BnbRecipe.fromSettings(request.target(), request.options().settings());
        if (!recipe.target().equals(request.target())) {
            throw new UnsupportedFeatureException(recipe.reference() + " is quantized to " + recipe.target()
                    + ", not " + request.target());
        }

        List<PlannedTensor> out = new ArrayList<>();
        List<ForgetPlan.Decision> decisions = new ArrayList<>();
        List<String> skipped = new ArrayList<>();
        String computeDtype = null;
        int matched = 0;
        for (DenseTensor t : request.tensors()) {
            Optional<BnbRecipe.Spec> spec;
            String why;
            if (recipe.uniform().isPresent()) {
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
            check(t, spec.get(), recipe);
            request.loss().expect(t.name());
            switch (spec.get()) {
                case BnbRecipe.FourBitSpec f -> {
                    String dtype = f.dtype().orElseGet(() -> torchDtype(t));
                    if (computeDtype == null) computeDtype = dtype;
                    out.addAll(FourBitTensors.plan(t, f, dtype, request.loss()));
                    decisions.add(new ForgetPlan.Decision(t.name(), f.type(), true, why));
                }
                case BnbRecipe.Int8Spec i -> {
                    out.addAll(Int8Tensors.plan(t, i, request.loss()));
                    decisions.add(new ForgetPlan.Decision(t.name(), "int8", true, why));
                }
            }
        }
        if (recipe.uniform().isEmpty() && matched == 0) {
            throw new UnsupportedFeatureException("the input has none of the " + recipe.perTensor().size() + " tensors "
                    + recipe.reference() + " quantizes (e.g. " + recipe.perTensor().keySet().iterator().next() + ")");
        }
        return new ForgetPlan(out, metadata(request, recipe, computeDtype, skipped), Map.of(), decisions);
    }

    /** A tensor must be numbers, and the shape the reference stores it in when imitating. */
    private static void check(DenseTensor t, BnbRecipe.Spec spec, BnbRecipe recipe) {
        if (!t.isNumeric()) {
            throw UnsupportedFeatureException.inTensor(t.name(), "is " + t.storedDType() + "; bitsandbytes quantizes float tensors");
        }
        if (spec.shape().isPresent() && !spec.shape().get().equals(t.shape())) {
            throw UnsupportedFeatureException.inTensor(t.name(), "is " + t.shape() + " but " + recipe.reference()
                    + " quantizes it as " + spec.shape().get() + "; --like needs the same shapes");
        }
        if (spec instanceof BnbRecipe.Int8Spec && t.shape().rank() != 2) {
            throw UnsupportedFeatureException.inTensor(t.name(), "is " + t.shape() + "; LLM.int8() quantizes matrices");
        }
    }

    /** bitsandbytes records the dtype of the tensor it quantized, as torch spells it. */
    static String torchDtype(DenseTensor t) {
        DType d = t.recoveredFrom().isPresent() ? DType.BF16 : t.storedDType();
        if (d.equals(DType.F32)) return "float32";
        if (d.equals(DType.F16)) return "float16";
        return "bfloat16";
    }

    /**
     * The input's metadata without its old quantization keys, {@code format: pt} (transformers
     * refuses a safetensors file whose metadata lacks it), and the quantization config: the
     * reference's as it is, else {@code BitsAndBytesConfig.to_dict()} with its keys sorted,
     * as transformers writes it into {@code config.json}.
     */
    private static Map<String, String> metadata(ForgetRequest request, BnbRecipe recipe, String computeDtype,
                                                List<String> skipped) {
        Map<String, String> m = new LinkedHashMap<>(request.source().metadata());
        m.remove("quantization_config");
        m.remove("quant_config");
        m.remove(RecoveryPlan.RECOVERED_FROM_KEY);
        m.putIfAbsent("format", "pt");
        String config = recipe.quantizationConfig().orElseGet(() -> {
            boolean fourBit = !recipe.target().equals("int8");
            BnbRecipe.Spec spec = recipe.uniform().orElseGet(() -> recipe.perTensor().values().iterator().next());
            BnbRecipe.FourBitSpec f = spec instanceof BnbRecipe.FourBitSpec s ? s : null;
            Map<String, Object> c = new TreeMap<>();
            c.put("_load_in_4bit", fourBit);
            c.put("_load_in_8bit", !fourBit);
            c.put("bnb_4bit_compute_dtype", computeDtype == null ? "float32" : computeDtype);
            c.put("bnb_4bit_quant_storage", "uint8");
            c.put("bnb_4bit_quant_type", fourBit ? recipe.target() : "fp4");
            c.put("bnb_4bit_use_double_quant", f != null && f.nested().isPresent());
            c.put("llm_int8_enable_fp32_cpu_offload", false);
            c.put("llm_int8_has_fp16_weight", false);
            c.put("llm_int8_skip_modules", skipped.isEmpty() ? null : List.copyOf(skipped));
            c.put("llm_int8_threshold", 6.0);
            c.put("load_in_4bit", fourBit);
            c.put("load_in_8bit", !fourBit);
            c.put("quant_method", "bitsandbytes");
            return Json.dumps(c);
        });
        m.put("quantization_config", config);
        return m;
    }
}
