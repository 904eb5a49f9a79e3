package io.anamnesis.quant.gguf.llama;

import static io.anamnesis.quant.gguf.llama.GgmlType.BF16;
import static io.anamnesis.quant.gguf.llama.GgmlType.F16;
import static io.anamnesis.quant.gguf.llama.GgmlType.F32;
import static io.anamnesis.quant.gguf.llama.GgmlType.IQ1_M;
import static io.anamnesis.quant.gguf.llama.GgmlType.IQ1_S;
import static io.anamnesis.quant.gguf.llama.GgmlType.IQ2_S;
import static io.anamnesis.quant.gguf.llama.GgmlType.IQ2_XS;
import static io.anamnesis.quant.gguf.llama.GgmlType.IQ2_XXS;
import static io.anamnesis.quant.gguf.llama.GgmlType.IQ3_S;
import static io.anamnesis.quant.gguf.llama.GgmlType.IQ3_XXS;
import static io.anamnesis.quant.gguf.llama.GgmlType.IQ4_NL;
import static io.anamnesis.quant.gguf.llama.GgmlType.IQ4_XS;
import static io.anamnesis.quant.gguf.llama.GgmlType.MXFP4;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q1_0;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q2_K;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q3_K;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q4_0;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q4_1;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q4_K;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q5_0;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q5_1;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q5_K;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q6_K;
import static io.anamnesis.quant.gguf.llama.GgmlType.Q8_0;
import static io.anamnesis.quant.gguf.llama.GgmlType.TQ1_0;
import static io.anamnesis.quant.gguf.llama.GgmlType.TQ2_0;

/**
 * llama-quantize's file types ({@code llama_ftype} of include/llama.h at ca01960e6a), in the
 * order of its {@code QUANT_OPTIONS} table, each with the id written to
 * {@code general.file_type}, the default tensor type {@code llama_ftype_get_default_type}
 * gives it, and the table's description. The constants are llama.h's names without their
 * {@code LLAMA_FTYPE_} prefix; llama-quantize's names drop {@code MOSTLY_}/{@code ALL_} too.
 */
public enum FileType {
    MOSTLY_Q1_0(40, Q1_0, "1.125 bpw quantization"),
    MOSTLY_Q4_0(2, Q4_0, "4.34G, +0.4685 ppl @ Llama-3-8B"),
    MOSTLY_Q4_1(3, Q4_1, "4.78G, +0.4511 ppl @ Llama-3-8B"),
    MOSTLY_MXFP4_MOE(38, MXFP4, "MXFP4 MoE"),
    MOSTLY_Q5_0(8, Q5_0, "5.21G, +0.1316 ppl @ Llama-3-8B"),
    MOSTLY_Q5_1(9, Q5_1, "5.65G, +0.1062 ppl @ Llama-3-8B"),
    MOSTLY_IQ2_XXS(19, IQ2_XXS, "2.06 bpw quantization"),
    MOSTLY_IQ2_XS(20, IQ2_XS, "2.31 bpw quantization"),
    /** Its default tensor type is IQ2_XS, not IQ2_S: that is IQ2_M's. */
    MOSTLY_IQ2_S(28, IQ2_XS, "2.5  bpw quantization"),
    MOSTLY_IQ2_M(29, IQ2_S, "2.7  bpw quantization"),
    MOSTLY_IQ1_S(24, IQ1_S, "1.56 bpw quantization"),
    MOSTLY_IQ1_M(31, IQ1_M, "1.75 bpw quantization"),
    MOSTLY_TQ1_0(36, TQ1_0, "1.69 bpw ternarization"),
    MOSTLY_TQ2_0(37, TQ2_0, "2.06 bpw ternarization"),
    MOSTLY_Q2_K(10, Q2_K, "2.96G, +3.5199 ppl @ Llama-3-8B"),
    MOSTLY_Q2_K_S(21, Q2_K, "2.96G, +3.1836 ppl @ Llama-3-8B"),
    MOSTLY_IQ3_XXS(23, IQ3_XXS, "3.06 bpw quantization"),
    MOSTLY_IQ3_S(26, IQ3_S, "3.44 bpw quantization"),
    MOSTLY_IQ3_M(27, IQ3_S, "3.66 bpw quantization mix"),
    MOSTLY_IQ3_XS(22, IQ3_S, "3.3 bpw quantization"),
    MOSTLY_Q3_K_S(11, Q3_K, "3.41G, +1.6321 ppl @ Llama-3-8B"),
    MOSTLY_Q3_K_M(12, Q3_K, "3.74G, +0.6569 ppl @ Llama-3-8B"),
    MOSTLY_Q3_K_L(13, Q3_K, "4.03G, +0.5562 ppl @ Llama-3-8B"),
    MOSTLY_IQ4_NL(25, IQ4_NL, "4.50 bpw non-linear quantization"),
    MOSTLY_IQ4_XS(30, IQ4_XS, "4.25 bpw non-linear quantization"),
    MOSTLY_Q4_K_S(14, Q4_K, "4.37G, +0.2689 ppl @ Llama-3-8B"),
    MOSTLY_Q4_K_M(15, Q4_K, "4.58G, +0.1754 ppl @ Llama-3-8B"),
    MOSTLY_Q5_K_S(16, Q5_K, "5.21G, +0.1049 ppl @ Llama-3-8B"),
    MOSTLY_Q5_K_M(17, Q5_K, "5.33G, +0.0569 ppl @ Llama-3-8B"),
    MOSTLY_Q6_K(18, Q6_K, "6.14G, +0.0217 ppl @ Llama-3-8B"),
    MOSTLY_Q8_0(7, Q8_0, "7.96G, +0.0026 ppl @ Llama-3-8B"),
    MOSTLY_F16(1, F16, "14.00G, +0.0020 ppl @ Mistral-7B"),
    MOSTLY_BF16(32, BF16, "14.00G, -0.0050 ppl @ Mistral-7B"),
    ALL_F32(0, F32, "26.00G              @ 7B");

    private final int id;
    private final GgmlType defaultType;
    private final String description;

    FileType(int id, GgmlType defaultType, String description) {
        this.id = id;
        this.defaultType = defaultType;
        this.description = description;
    }

    /** llama-quantize's name: {@code Q4_K_M}, {@code IQ2_XXS}, {@code F32}. */
    public String llamaName() {
        return name().substring(name().indexOf('_') + 1);
    }

    /** The {@code llama_ftype} value, written to {@code general.file_type}. */
    public int id() {
        return id;
    }

    /** {@code llama_ftype_get_default_type}. */
    public GgmlType defaultType() {
        return defaultType;
    }

    /** llama-quantize's one-line description. */
    public String description() {
        return description.strip();
    }
}
