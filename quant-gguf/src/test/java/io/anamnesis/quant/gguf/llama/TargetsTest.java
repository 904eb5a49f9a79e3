package io.anamnesis.quant.gguf.llama;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class TargetsTest {

    @Test
    void llamaQuantizesFileTypesComeFirstInItsOrderWithItsIds() {
        // tools/quantize/quantize.cpp QUANT_OPTIONS at ca01960e6a, without COPY
        assertThat(Targets.all().keySet().stream().limit(37).toList()).containsExactly(
                "q1_0", "q4_0", "q4_1", "mxfp4_moe", "q5_0", "q5_1", "iq2_xxs", "iq2_xs", "iq2_s", "iq2_m", "iq1_s",
                "iq1_m", "tq1_0", "tq2_0", "q2_k", "q2_k_s", "iq3_xxs", "iq3_s", "iq3_m", "q3_k", "iq3_xs", "q3_k_s",
                "q3_k_m", "q3_k_l", "iq4_nl", "iq4_xs", "q4_k", "q4_k_s", "q4_k_m", "q5_k", "q5_k_s", "q5_k_m", "q6_k",
                "q8_0", "f16", "bf16", "f32");
        // include/llama.h: LLAMA_FTYPE_MOSTLY_Q4_K_M = 15, IQ2_M = 29, BF16 = 32, MXFP4_MOE = 38, Q1_0 = 40, ALL_F32 = 0
        assertThat(Targets.of("Q4_K_M").orElseThrow().fileTypeId()).isEqualTo(15);
        assertThat(Targets.of("iq2_m").orElseThrow().fileTypeId()).isEqualTo(29);
        assertThat(Targets.of("bf16").orElseThrow().fileTypeId()).isEqualTo(32);
        assertThat(Targets.of("mxfp4_moe").orElseThrow().fileTypeId()).isEqualTo(38);
        assertThat(Targets.of("q1_0").orElseThrow().fileTypeId()).isEqualTo(40);
        assertThat(Targets.of("f32").orElseThrow().fileTypeId()).isEqualTo(0);
    }

    @Test
    void aNameThatIsBothATypeAndAFileTypeIsTheFileTypeAndGgmlNamesTheType() {
        assertThat(Targets.of("q4_k")).contains(new Target.Mix(FileType.MOSTLY_Q4_K_M));
        assertThat(Targets.of("iq2_s")).contains(new Target.Mix(FileType.MOSTLY_IQ2_S));
        assertThat(Targets.of("ggml:iq2_s")).contains(new Target.Exact(GgmlType.IQ2_S));
        assertThat(Targets.of("ggml:q4_k")).contains(new Target.Exact(GgmlType.Q4_K));
        // no llama-quantize file type of these names: the type itself
        for (String s : List.of("mxfp4", "nvfp4", "q2_0")) {
            assertThat(Targets.of(s).orElseThrow()).isInstanceOf(Target.Exact.class);
        }
        assertThat(Targets.of("q4_k_x")).isEmpty();
        // every ggml type has its ggml: name
        for (GgmlType t : GgmlType.values()) assertThat(Targets.of("ggml:" + t.name())).contains(new Target.Exact(t));
    }

    @Test
    void aGgmlTypeWritesTheFileTypeLlamaCppsLoaderGuessesForIt() {
        // llama-model-loader.cpp's type_max table: Q4_K -> MOSTLY_Q4_K_M (15), Q3_K -> Q3_K_M (12), IQ2_S -> IQ2_S (28)
        assertThat(new Target.Exact(GgmlType.Q4_K).fileTypeId()).isEqualTo(15);
        assertThat(new Target.Exact(GgmlType.Q3_K).fileTypeId()).isEqualTo(12);
        assertThat(new Target.Exact(GgmlType.IQ2_S).fileTypeId()).isEqualTo(28);
        assertThat(new Target.Exact(GgmlType.NVFP4).fileTypeId()).isEqualTo(39);
    }

    @Test
    void fileTypesDefaultTypesAreLlamaCpps() {
        // llama_ftype_get_default_type: the two that differ from their name
        assertThat(FileType.MOSTLY_IQ2_S.defaultType()).isEqualTo(GgmlType.IQ2_XS);
        assertThat(FileType.MOSTLY_IQ3_XS.defaultType()).isEqualTo(GgmlType.IQ3_S);
        assertThat(FileType.MOSTLY_Q2_K_S.llamaName()).isEqualTo("Q2_K_S");
        assertThat(FileType.ALL_F32.llamaName()).isEqualTo("F32");
    }
}
