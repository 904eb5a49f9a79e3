package io.anamnesis.quant.gguf.llama;

import io.anamnesis.api.Shape;
import io.anamnesis.api.UnsupportedFeatureException;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Which tensors of a model a target quantizes, and to what: llama.cpp's
 * {@code llama_model_quantize_impl} up to the first byte (src/llama-quant.cpp, ca01960e6a).
 * In order:
 * <ol>
 *   <li>tensors are taken in llama.cpp's order ({@link LayerNames#LLAMA_ORDER}), which the
 *       layer counters of the mix depend on, and which is the output file's order;</li>
 *   <li>{@link #ELIGIBILITY}: a tensor is quantized only if it has two or more dimensions,
 *       its name ends in "weight" and is none of the small or sensitive ones
 *       ({@code tensor_allows_quantization}); the others keep their type;</li>
 *   <li>the type: the file type's default, refined by its {@link LlamaMix} unless
 *       {@code --pure} (or a float file type); then, when a row does not fit the type's
 *       block, the {@link #FALLBACK} type ({@code tensor_type_fallback});</li>
 *   <li>a tensor whose type does not change is copied as it is;</li>
 *   <li>whether the chosen type needs an importance matrix ({@link Need}).</li>
 * </ol>
 */
public final class TypePolicy {
    private TypePolicy() {
    }

    /**
     * One tensor of the model, as the choice sees it.
     *
     * @param name   GGUF (or safetensors) name
     * @param shape  row-major shape: the last dimension is ggml's {@code ne[0]}, the row
     * @param stored the ggml type it is stored as, when it is one (a tensor of any other
     *               dtype, e.g. FP8 or a recovered GPTQ group, is never "already" its target)
     * @param keep   the user asked to leave it as it is ({@code --keep})
     */
    public record Tensor(String name, Shape shape, Optional<GgmlType> stored, boolean keep) {
        /** ggml's {@code ne[i]}: dimension {@code i} counted from the row, 1 past the rank. */
        public long ne(int i) {
            return i < shape.rank() ? shape.dim(shape.rank() - 1 - i) : 1;
        }

        /** {@code ggml_n_dims}: trailing dimensions of 1 do not count (a [1, n] tensor is 1-D). */
        public int dims() {
            for (int i = shape.rank() - 1; i >= 1; i--) {
                if (ne(i) > 1) return i + 1;
            }
            return 1;
        }
    }

    /** How much the chosen type wants an importance matrix. */
    public enum Need {
        NONE,
        /** llama.cpp refuses it without one, ggml does not: a warning for a ggml-type target. */
        ADVISED,
        /** The target cannot be made without one. */
        REQUIRED
    }

    /**
     * What one tensor becomes.
     *
     * @param tensor   the tensor
     * @param type     its type in the output; empty when it is left as stored and is no ggml type
     * @param quantize whether it is encoded (false: written as it is, or as its dense values)
     * @param imatrix  how much its type wants an importance matrix
     * @param fellBack its rows did not fit the chosen type, which fell back to {@code type}
     * @param why      the rule that decided, for the summary
     */
    public record Choice(Tensor tensor, Optional<GgmlType> type, boolean quantize, Need imatrix, boolean fellBack,
                         String why) {
    }

    /** Why a tensor is not quantized, the first rule that applies ({@code tensor_allows_quantization}). */
    private record Exclusion(String why, Predicate<Tensor> applies) {
    }

    private static Exclusion contains(String part, String why) {
        return new Exclusion(why, t -> t.name().contains(part));
    }

    /**
     * The tensors llama.cpp never quantizes (quantize_output_tensor and only_copy at their
     * defaults). "Ends with weight" is llama.cpp's {@code name.rfind("weight") == size - 6},
     * which also holds for a 5-character name without "weight" (npos == size - 6 there).
     */
    static final List<Exclusion> ELIGIBILITY = List.of(
            new Exclusion("--keep", Tensor::keep),
            new Exclusion("1-D tensors stay as they are", t -> t.dims() < 2),
            new Exclusion("only tensors named *weight are quantized", t -> !endsWithWeight(t.name())),
            contains("_norm.weight", "norms stay as they are"),
            contains("ffn_gate_inp.weight", "expert gating stays as it is"),
            contains("altup", "small (altup)"),
            contains("laurel", "small (laurel)"),
            contains("per_layer_model_proj", "small (per_layer_model_proj)"),
            new Exclusion("positional embeddings stay as they are", t -> t.name().equals("position_embd.weight")),
            new Exclusion("token types stay as they are", t -> t.name().equals("token_types.weight")),
            contains("ssm_conv1d", "small conv1d"),
            contains("shortconv.conv.weight", "small conv1d"),
            contains("time_mix_first.weight", "small RWKV weight"),
            contains("time_mix_w0.weight", "small RWKV weight"),
            contains("time_mix_w1.weight", "small RWKV weight"),
            contains("time_mix_w2.weight", "small RWKV weight"),
            contains("time_mix_v0.weight", "small RWKV weight"),
            contains("time_mix_v1.weight", "small RWKV weight"),
            contains("time_mix_v2.weight", "small RWKV weight"),
            contains("time_mix_a0.weight", "small RWKV weight"),
            contains("time_mix_a1.weight", "small RWKV weight"),
            contains("time_mix_a2.weight", "small RWKV weight"),
            contains("time_mix_g1.weight", "small RWKV weight"),
            contains("time_mix_g2.weight", "small RWKV weight"),
            contains("time_mix_decay_w1.weight", "small RWKV weight"),
            contains("time_mix_decay_w2.weight", "small RWKV weight"),
            contains("time_mix_lerp_fused.weight", "small RWKV weight"),
            contains("attn_rel_b.weight", "relative position bias stays as it is"),
            contains(".position_embd", "multimodal position embeddings stay"),
            contains("sam.pos_embd", "multimodal position embeddings stay"),
            contains("sam.neck.", "multimodal (sam.neck) stays"),
            contains("sam.net_", "multimodal (sam.net) stays"),
            contains(".rel_pos", "relative positions stay"),
            contains(".patch_embd", "patch embeddings stay"),
            contains(".patch_merger", "patch merger stays"));

    static boolean endsWithWeight(String name) {
        return name.endsWith("weight") || name.length() == 5 && !name.contains("weight");
    }

    /**
     * {@code tensor_type_fallback}: the type a row that does not fit falls back to, from
     * 256-element blocks to 32-element ones. A type without an entry has no fallback.
     */
    static final Map<GgmlType, GgmlType> FALLBACK = Map.ofEntries(
            Map.entry(GgmlType.IQ1_S, GgmlType.IQ4_NL), Map.entry(GgmlType.IQ1_M, GgmlType.IQ4_NL),
            Map.entry(GgmlType.IQ2_XXS, GgmlType.IQ4_NL), Map.entry(GgmlType.IQ2_XS, GgmlType.IQ4_NL),
            Map.entry(GgmlType.IQ2_S, GgmlType.IQ4_NL), Map.entry(GgmlType.IQ3_XXS, GgmlType.IQ4_NL),
            Map.entry(GgmlType.IQ3_S, GgmlType.IQ4_NL), Map.entry(GgmlType.IQ4_XS, GgmlType.IQ4_NL),
            Map.entry(GgmlType.Q2_K, GgmlType.Q4_0), Map.entry(GgmlType.Q3_K, GgmlType.Q4_0),
            Map.entry(GgmlType.TQ1_0, GgmlType.Q4_0), Map.entry(GgmlType.TQ2_0, GgmlType.Q4_0),
            Map.entry(GgmlType.Q4_K, GgmlType.Q5_0), Map.entry(GgmlType.Q5_K, GgmlType.Q5_1),
            Map.entry(GgmlType.Q6_K, GgmlType.Q8_0));

    /** {@code tensor_requires_imatrix}: the types llama.cpp refuses to make without an importance matrix. */
    private static final Set<GgmlType> LLAMA_NEEDS_IMATRIX = EnumSet.of(
            GgmlType.IQ3_XXS, GgmlType.IQ2_XXS, GgmlType.IQ2_XS, GgmlType.IQ2_S, GgmlType.IQ1_M, GgmlType.IQ1_S);

    /** The tensors in the order llama.cpp writes them. */
    public static List<Tensor> inLlamaOrder(List<Tensor> tensors) {
        List<Tensor> sorted = new ArrayList<>(tensors);
        sorted.sort((a, b) -> LayerNames.LLAMA_ORDER.compare(a.name(), b.name()));
        return sorted;
    }

    /**
     * What each tensor becomes, in llama.cpp's order.
     *
     * @param pure       {@code --pure}: no mix and no fallback, every eligible tensor the file type's default
     * @param hasImatrix an importance matrix was given (some mixes differ with one)
     * @throws UnsupportedFeatureException naming the tensor, when its rows fit neither the type
     *         nor any fallback llama.cpp defines
     */
    public static List<Choice> choose(Target target, ModelFacts model, List<Tensor> tensors, boolean pure, boolean hasImatrix) {
        List<Tensor> ordered = inLlamaOrder(tensors);
        int attentionV = 0;
        boolean tied = true;
        for (Tensor t : ordered) {
            Category c = Category.of(t.name());
            if (c.isAttentionV()) attentionV++;
            if (c == Category.OUTPUT) tied = false;
        }
        LlamaMix mix = target instanceof Target.Mix m ? new LlamaMix(m.fileType(), model, hasImatrix, attentionV, tied) : null;
        List<Choice> out = new ArrayList<>(ordered.size());
        for (Tensor t : ordered) out.add(chooseOne(target, mix, t, pure));
        return out;
    }

    private static Choice chooseOne(Target target, LlamaMix mix, Tensor t, boolean pure) {
        for (Exclusion e : ELIGIBILITY) {
            if (e.applies().test(t)) return new Choice(t, t.stored(), false, Need.NONE, false, e.why());
        }
        LlamaMix.Pick pick = switch (target) {
            case Target.Mix m when pure -> new LlamaMix.Pick(m.fileType().defaultType(), "--pure: " + m.describe() + " default");
            case Target.Mix m when !m.fileType().defaultType().isQuantized() ->
                    new LlamaMix.Pick(m.fileType().defaultType(), m.describe() + ": every eligible tensor");
            case Target.Mix m -> mix.choose(t.name(), t.ne(0), t.ne(2), Category.of(t.name()));
            case Target.Exact e -> new LlamaMix.Pick(e.type(), e.describe());
        };
        GgmlType type = pick.type();
        String why = pick.why();
        boolean fellBack = false;
        boolean mayFallBack = type.isQuantized() && !(pure && target instanceof Target.Mix);
        if (!type.fits(t.ne(0))) {
            if (!mayFallBack) {
                throw UnsupportedFeatureException.inTensor(t.name(), "row length " + t.ne(0) + " is not a multiple of the "
                        + type.ggmlName() + " block of " + type.blockElements() + " (--pure takes no fallback)");
            }
            GgmlType fallback = FALLBACK.get(type);
            if (fallback == null) {
                throw UnsupportedFeatureException.inTensor(t.name(), "row length " + t.ne(0) + " is not a multiple of the "
                        + type.ggmlName() + " block of " + type.blockElements() + ", and llama.cpp defines no fallback for "
                        + type.ggmlName());
            }
            // the fallback's own blocks may not fit either (a row not a multiple of 32): F16 then
            GgmlType to = fallback.fits(t.ne(0)) ? fallback : GgmlType.F16;
            why = why + "; row length " + t.ne(0) + " does not fit " + type.ggmlName() + ": " + to.ggmlName();
            type = to;
            fellBack = true;
        }
        GgmlType chosen = type;
        boolean quantize = t.stored().map(s -> s != chosen).orElse(true);
        if (!quantize) why = why + " (already " + type.ggmlName() + ": copied)";
        return new Choice(t, Optional.of(type), quantize, need(target, t.name(), type), fellBack, why);
    }

    private static Need need(Target target, String name, GgmlType type) {
        boolean llama = !Category.of(name).equals(Category.TOKEN_EMBD) && !name.equals("output.weight")
                && (LLAMA_NEEDS_IMATRIX.contains(type)
                || type == GgmlType.Q2_K && target instanceof Target.Mix m && m.fileType() == FileType.MOSTLY_Q2_K_S);
        return switch (target) {
            case Target.Mix m -> llama ? Need.REQUIRED : Need.NONE;
            case Target.Exact e -> Target.Exact.GGML_NEEDS_IMATRIX.contains(type) ? Need.REQUIRED
                    : llama ? Need.ADVISED : Need.NONE;
        };
    }
}
