package io.anamnesis.quant.gguf.llama;

import io.anamnesis.api.MalformedFileException;

import java.util.EnumSet;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.Set;

import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_IQ1_M;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_IQ1_S;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_IQ2_M;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_IQ2_S;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_IQ2_XS;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_IQ2_XXS;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_IQ3_M;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_IQ3_S;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_IQ3_XS;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_IQ3_XXS;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_IQ4_NL;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_IQ4_XS;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_Q2_K;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_Q3_K_L;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_Q3_K_M;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_Q3_K_S;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_Q4_K_M;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_Q4_K_S;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_Q5_K_M;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_TQ1_0;
import static io.anamnesis.quant.gguf.llama.FileType.MOSTLY_TQ2_0;
import static io.anamnesis.quant.gguf.llama.GgmlType.IQ2_XXS;
import static io.anamnesis.quant.gguf.llama.GgmlType.IQ3_S;
import static io.anamnesis.quant.gguf.llama.GgmlType.IQ3_XXS;
import static io.anamnesis.quant.gguf.llama.GgmlType.MXFP4;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q2_K;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q3_K;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q4_1;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q4_K;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q5_1;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q5_K;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q6_K;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q8_0;

/**
 * The per-tensor type mix of a llama-quantize file type: what
 * {@code llama_tensor_get_type_impl} (src/llama-quant.cpp, ca01960e6a) makes of a tensor
 * whose file type's default is a block type, when there is no {@code --pure}. One method per
 * category, each a short list of "file type (and condition) -> type" rules; the first that
 * applies wins, and a tensor no rule names keeps the default.
 *
 * <p>Stateful like llama.cpp's {@code quantize_state_impl}: attention-V, ffn_down, ffn_gate
 * and ffn_up tensors are counted as they are met, in {@link LayerNames#LLAMA_ORDER}, and the
 * counts pick layers ({@link #useMoreBits}). One instance per model.
 */
final class LlamaMix {
    /** The very-low-bit file types, which have their own branch in llama.cpp. */
    private static final Set<FileType> VERY_LOW_BIT = EnumSet.of(
            MOSTLY_IQ2_XXS, MOSTLY_IQ2_XS, MOSTLY_IQ1_S, MOSTLY_IQ2_S, MOSTLY_IQ2_M, MOSTLY_IQ1_M);
    /** File types whose output tensor is Q5_K (the others: Q6_K, or Q8_0 already). */
    private static final Set<FileType> OUTPUT_Q5_K = EnumSet.of(
            MOSTLY_IQ2_XXS, MOSTLY_IQ2_XS, MOSTLY_IQ3_XXS, MOSTLY_IQ1_S, MOSTLY_IQ2_S, MOSTLY_IQ2_M, MOSTLY_IQ1_M);
    /** File types whose attn_output is Q5_K in an 8-expert model. */
    private static final Set<FileType> ATTN_OUTPUT_8_EXPERTS_Q5_K = EnumSet.of(
            MOSTLY_Q2_K, MOSTLY_IQ3_XS, MOSTLY_IQ3_XXS, MOSTLY_Q3_K_S, MOSTLY_Q3_K_M, MOSTLY_IQ4_NL,
            MOSTLY_Q4_K_S, MOSTLY_Q4_K_M, MOSTLY_IQ3_S, MOSTLY_IQ3_M, MOSTLY_IQ4_XS);

    /** A chosen type and the rule that chose it. */
    record Pick(GgmlType type, String why) {
    }

    private final FileType ft;
    private final ModelFacts model;
    private final boolean hasImatrix;
    private final boolean tiedEmbeddings;
    private final int attentionVCount;
    private int attentionV;
    private int ffnDown;
    private int ffnGate;
    private int ffnUp;

    /**
     * @param attentionVCount {@code n_attention_wv}: how many tensor names of the model are attention-V-like
     * @param tiedEmbeddings  no tensor is named {@code output.weight}: the token embeddings are the output
     */
    LlamaMix(FileType ft, ModelFacts model, boolean hasImatrix, int attentionVCount, boolean tiedEmbeddings) {
        this.ft = ft;
        this.model = model;
        this.hasImatrix = hasImatrix;
        this.attentionVCount = attentionVCount;
        this.tiedEmbeddings = tiedEmbeddings;
    }

    /** {@code use_more_bits}: the first and last eighth of the layers, and every third layer between. */
    static boolean useMoreBits(int layer, int layers) {
        return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
    }

    /** The type of one quantizable tensor, starting from the file type's default (a block type). */
    Pick choose(String name, long rowLength, long experts, Category c) {
        GgmlType def = ft.defaultType();
        if (c == Category.OUTPUT || (tiedEmbeddings && c == Category.TOKEN_EMBD)) return output(def, rowLength);
        if (ft == FileType.MOSTLY_MXFP4_MOE) {
            return experts > 1 ? new Pick(MXFP4, "MXFP4_MOE: expert tensors are mxfp4")
                    : new Pick(Q8_0, "MXFP4_MOE: tensors other than experts are q8_0");
        }
        if (c == Category.TOKEN_EMBD) return tokenEmbedding(def);
        if (VERY_LOW_BIT.contains(ft)) return veryLowBit(def, c);
        if (c.isAttentionV()) return attentionV(def);
        return switch (c) {
            case ATTENTION_K -> attentionK(def);
            case ATTENTION_Q -> attentionQ(def);
            case FFN_DOWN -> ffnDown(def, name);
            case ATTENTION_OUTPUT -> attentionOutput(def);
            case FFN_GATE -> ffnGateOrUp(def, name, true);
            case FFN_UP -> ffnGateOrUp(def, name, false);
            default -> keep(def);
        };
    }

    private Pick keep(GgmlType def) {
        return new Pick(def, ft.llamaName() + " default");
    }

    private Pick output(GgmlType def, long rowLength) {
        String what = tiedEmbeddings ? "tied token embeddings (the output tensor)" : "output tensor";
        if (ft == FileType.MOSTLY_MXFP4_MOE) return new Pick(Q8_0, what + " of MXFP4_MOE: q8_0");
        if (model.isFalcon() || rowLength % def.blockElements() != 0) {
            return new Pick(Q8_0, what + ": q8_0 (" + (model.isFalcon() ? "falcon" : "rows do not fit " + def.ggmlName()) + ")");
        }
        if (OUTPUT_Q5_K.contains(ft)) return new Pick(Q5_K, what + " of a very-low-bit type: q5_K");
        if (def != Q8_0) return new Pick(Q6_K, what + ": q6_K");
        return new Pick(def, what);
    }

    private Pick tokenEmbedding(GgmlType def) {
        return switch (ft) {
            case MOSTLY_IQ2_XXS, MOSTLY_IQ2_XS, MOSTLY_IQ1_S, MOSTLY_IQ1_M -> new Pick(Q2_K, "token embeddings of " + ft.llamaName() + ": q2_K");
            case MOSTLY_IQ2_S, MOSTLY_IQ2_M, MOSTLY_IQ3_XXS -> new Pick(IQ3_S, "token embeddings of " + ft.llamaName() + ": iq3_s");
            case MOSTLY_TQ1_0, MOSTLY_TQ2_0 -> new Pick(Q4_K, "token embeddings of " + ft.llamaName() + ": q4_K");
            default -> keep(def);
        };
    }

    /** IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ1_S, IQ1_M: a branch of their own, before the per-category rules. */
    private Pick veryLowBit(GgmlType def, Category c) {
        boolean iq2sm = ft == MOSTLY_IQ2_S || ft == MOSTLY_IQ2_M;
        if (c.isAttentionV()) {
            attentionV++;
            if (model.gqa() >= 4 || model.experts() >= 4) return new Pick(Q4_K, "attn_v with grouped-query attention or experts: q4_K");
            return iq2sm ? new Pick(IQ3_S, "attn_v: iq3_s") : new Pick(Q2_K, "attn_v: q2_K");
        }
        if (model.experts() == 8 && c == Category.ATTENTION_K) return new Pick(Q4_K, "attn_k of an 8-expert model: q4_K");
        if (c == Category.FFN_DOWN) {
            int i = ffnDown++;
            if (i < model.layers() / 8) {
                return iq2sm ? new Pick(IQ3_S, "ffn_down in the first eighth of the layers: iq3_s")
                        : new Pick(Q2_K, "ffn_down in the first eighth of the layers: q2_K");
            }
            return keep(def);
        }
        if (c == Category.ATTENTION_OUTPUT) {
            if (model.experts() == 8) return new Pick(Q5_K, "attn_output of an 8-expert model: q5_K");
            if (ft == MOSTLY_IQ1_S || ft == MOSTLY_IQ1_M) return new Pick(IQ2_XXS, "attn_output: iq2_xxs");
            if (iq2sm) return new Pick(IQ3_S, "attn_output: iq3_s");
        }
        return keep(def);
    }

    private Pick attentionV(GgmlType def) {
        int i = attentionV++;
        long gqa = model.gqa();
        Pick p = switch (ft) {
            case MOSTLY_Q2_K -> gqa >= 4 ? new Pick(Q4_K, "attn_v with gqa >= 4: q4_K") : new Pick(Q3_K, "attn_v: q3_K");
            case MOSTLY_Q2_K_S -> gqa >= 4 ? new Pick(Q4_K, "attn_v with gqa >= 4: q4_K") : null;
            case MOSTLY_IQ3_XXS -> gqa >= 4 ? new Pick(Q4_K, "attn_v with gqa >= 4: q4_K")
                    : hasImatrix ? new Pick(IQ3_XXS, "attn_v with an imatrix: iq3_xxs") : new Pick(IQ3_S, "attn_v without an imatrix: iq3_s");
            case MOSTLY_IQ3_XS, MOSTLY_IQ3_S -> gqa >= 4 ? new Pick(Q4_K, "attn_v with gqa >= 4: q4_K") : null;
            case MOSTLY_IQ3_M -> new Pick(Q4_K, "attn_v: q4_K");
            case MOSTLY_Q3_K_M -> i < 2 ? new Pick(Q5_K, "attn_v of the first two layers: q5_K") : new Pick(Q4_K, "attn_v: q4_K");
            case MOSTLY_Q3_K_L -> new Pick(Q5_K, "attn_v: q5_K");
            case MOSTLY_IQ4_NL, MOSTLY_IQ4_XS -> gqa >= 4 ? new Pick(Q5_K, "attn_v with gqa >= 4: q5_K") : null;
            case MOSTLY_Q4_K_M, MOSTLY_Q5_K_M -> useMoreBits(i, attentionVCount)
                    ? new Pick(Q6_K, "attn_v in a use_more_bits layer: q6_K") : null;
            case MOSTLY_Q4_K_S -> i < 4 ? new Pick(Q5_K, "attn_v of the first four layers: q5_K") : null;
            default -> null;
        };
        if (p == null) p = keep(def);
        // 70B llamas share one attn_v among 8 heads: a few more bits cost little
        if (model.is70B() && (p.type() == Q3_K || p.type() == Q4_K)) p = new Pick(Q5_K, "attn_v of a 70B model: q5_K");
        if (model.experts() == 8) p = new Pick(Q8_0, "attn_v of an 8-expert model: q8_0");
        return p;
    }

    private Pick attentionK(GgmlType def) {
        if (model.experts() == 8) return new Pick(Q8_0, "attn_k of an 8-expert model: q8_0");
        if (ft == MOSTLY_IQ3_XS) return new Pick(IQ3_XXS, "attn_k: iq3_xxs");
        if (ft == MOSTLY_IQ3_XXS) return new Pick(GgmlType.IQ2_S, "attn_k: iq2_s");
        return keep(def);
    }

    private Pick attentionQ(GgmlType def) {
        if (ft == MOSTLY_IQ3_XS) return new Pick(IQ3_XXS, "attn_q: iq3_xxs");
        if (ft == MOSTLY_IQ3_XXS) return new Pick(GgmlType.IQ2_S, "attn_q: iq2_s");
        return keep(def);
    }

    private Pick ffnDown(GgmlType def, String name) {
        int n = model.layers();
        int i = layer(ffnDown++, n, name);
        boolean falcon = model.isFalcon();
        Pick p = switch (ft) {
            case MOSTLY_Q2_K -> new Pick(Q3_K, "ffn_down: q3_K");
            case MOSTLY_Q2_K_S -> i < n / 8 ? new Pick(Q4_K, "ffn_down in the first eighth of the layers: q4_K") : null;
            case MOSTLY_IQ3_XXS -> hasImatrix ? null : i < n / 8
                    ? new Pick(Q4_K, "ffn_down in the first eighth, no imatrix: q4_K") : new Pick(Q3_K, "ffn_down without an imatrix: q3_K");
            case MOSTLY_Q3_K_M -> i < n / 16 ? new Pick(Q5_K, "ffn_down in the first sixteenth of the layers: q5_K")
                    // (arch != FALCON || use_more_bits) as llama.cpp writes it: q4_K for every non-falcon layer
                    : !falcon || useMoreBits(i, n) ? new Pick(Q4_K, "ffn_down: q4_K") : new Pick(Q3_K, "ffn_down: q3_K");
            case MOSTLY_IQ3_M -> i < n / 8 || (model.experts() == 8 && useMoreBits(i, n))
                    ? new Pick(Q4_K, "ffn_down in the first eighth of the layers: q4_K") : null;
            case MOSTLY_Q3_K_L -> falcon ? new Pick(Q4_K, "ffn_down of falcon: q4_K") : new Pick(Q5_K, "ffn_down: q5_K");
            case MOSTLY_Q4_K_M -> falcon
                    ? (i < n / 16 ? new Pick(Q6_K, "ffn_down in the first sixteenth: q6_K")
                    : useMoreBits(i, n) ? new Pick(Q5_K, "ffn_down in a use_more_bits layer: q5_K") : new Pick(Q4_K, "ffn_down: q4_K"))
                    : useMoreBits(i, n) ? new Pick(Q6_K, "ffn_down in a use_more_bits layer: q6_K") : null;
            case MOSTLY_IQ4_NL, MOSTLY_IQ4_XS -> i < n / 8 && !hasImatrix
                    ? new Pick(Q5_K, "ffn_down in the first eighth, no imatrix: q5_K") : null;
            case MOSTLY_Q5_K_M -> useMoreBits(i, n) ? new Pick(Q6_K, "ffn_down in a use_more_bits layer: q6_K") : null;
            case MOSTLY_Q4_K_S -> !falcon && i < n / 8 ? new Pick(Q5_K, "ffn_down in the first eighth of the layers: q5_K") : null;
            // only with an imatrix, so that the same file without one quantizes as it always did
            case MOSTLY_Q4_0 -> hasImatrix && i < n / 8 ? new Pick(Q4_1, "ffn_down in the first eighth, with an imatrix: q4_1") : null;
            case MOSTLY_Q5_0 -> hasImatrix && i < n / 8 ? new Pick(Q5_1, "ffn_down in the first eighth, with an imatrix: q5_1") : null;
            default -> null;
        };
        return p == null ? keep(def) : p;
    }

    private Pick attentionOutput(GgmlType def) {
        if (model.isFalcon()) return ft == MOSTLY_Q3_K_L ? new Pick(Q4_K, "attn_output of falcon: q4_K") : keep(def);
        if (model.experts() == 8) {
            return ATTN_OUTPUT_8_EXPERTS_Q5_K.contains(ft) ? new Pick(Q5_K, "attn_output of an 8-expert model: q5_K") : keep(def);
        }
        return switch (ft) {
            case MOSTLY_Q2_K -> new Pick(Q3_K, "attn_output: q3_K");
            case MOSTLY_IQ3_XXS -> new Pick(IQ3_S, "attn_output: iq3_s");
            case MOSTLY_Q3_K_M, MOSTLY_IQ3_M -> new Pick(Q4_K, "attn_output: q4_K");
            case MOSTLY_Q3_K_L -> new Pick(Q5_K, "attn_output: q5_K");
            default -> keep(def);
        };
    }

    private Pick ffnGateOrUp(GgmlType def, String name, boolean gate) {
        int n = model.layers();
        int i = layer(gate ? ffnGate++ : ffnUp++, n, name);
        if (ft == MOSTLY_IQ3_XS && i >= n / 8 && i < 7 * n / 8) {
            return new Pick(IQ3_XXS, (gate ? "ffn_gate" : "ffn_up") + " in the middle layers: iq3_xxs");
        }
        return keep(def);
    }

    /**
     * {@code layer_info}: the counter is the layer of a dense model; with experts the layer
     * comes from the name, since expert tensors are not stored layer by layer.
     */
    private int layer(int counted, int layers, String name) {
        if (model.experts() <= 1) return counted;
        OptionalInt layer = LayerNames.parseLayer(name);
        if (layer.isEmpty()) {
            throw MalformedFileException.inTensor(name, "cannot tell its layer (no blk.N. prefix) in a model with "
                    + model.experts() + " experts");
        }
        if (layer.getAsInt() < 0 || layer.getAsInt() >= layers) {
            throw MalformedFileException.inTensor(name, String.format(Locale.ROOT,
                    "layer %d is outside the model's %d layers", layer.getAsInt(), layers));
        }
        return layer.getAsInt();
    }
}
