package io.anamnesis.quant.gguf.llama;

import io.anamnesis.api.Shape;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.MalformedFileException;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * llama.cpp's type choice on models built in code. Each expectation is worked out from the
 * rule it tests, as src/llama-quant.cpp (ca01960e6a) states it, in the test's comment.
 */
class TypePolicyTest {

    static TypePolicy.Tensor t(String name, long... shape) {
        return new TypePolicy.Tensor(name, Shape.of(shape), Optional.of(GgmlType.F16), false);
    }

    /** A llama-shaped model: row length {@code embd} everywhere except ffn_down's {@code ff}. */
    static List<TypePolicy.Tensor> llama(int layers, long embd, long kv, long ff, boolean output) {
        List<TypePolicy.Tensor> m = new ArrayList<>();
        m.add(t("token_embd.weight", 256, embd));
        m.add(new TypePolicy.Tensor("output_norm.weight", Shape.of(embd), Optional.of(GgmlType.F32), false));
        if (output) m.add(t("output.weight", 256, embd));
        for (int i = 0; i < layers; i++) {
            String b = "blk." + i + ".";
            m.add(new TypePolicy.Tensor(b + "attn_norm.weight", Shape.of(embd), Optional.of(GgmlType.F32), false));
            m.add(t(b + "attn_q.weight", embd, embd));
            m.add(t(b + "attn_k.weight", kv, embd));
            m.add(t(b + "attn_v.weight", kv, embd));
            m.add(t(b + "attn_output.weight", embd, embd));
            m.add(new TypePolicy.Tensor(b + "ffn_norm.weight", Shape.of(embd), Optional.of(GgmlType.F32), false));
            m.add(t(b + "ffn_gate.weight", ff, embd));
            m.add(t(b + "ffn_up.weight", ff, embd));
            m.add(t(b + "ffn_down.weight", embd, ff));
        }
        return m;
    }

    static ModelFacts facts(int layers, long heads, long kvHeads) {
        return new ModelFacts("llama", layers, 0, heads, kvHeads);
    }

    /** name -> ggml type name of each choice. */
    static Map<String, String> types(List<TypePolicy.Choice> choices) {
        Map<String, String> m = new LinkedHashMap<>();
        for (TypePolicy.Choice c : choices) m.put(c.tensor().name(), c.type().map(GgmlType::ggmlName).orElse("-"));
        return m;
    }

    static Target mix(FileType ft) {
        return new Target.Mix(ft);
    }

    @Test
    void useMoreBitsTakesTheFirstAndLastEighthAndEveryThirdLayerBetween() {
        // 32 layers: i < 4, i >= 28, and (i - 4) % 3 == 2, i.e. 6, 9, ..., 27
        List<Integer> chosen = IntStream.range(0, 32).filter(i -> LlamaMix.useMoreBits(i, 32)).boxed().toList();
        assertThat(chosen).containsExactly(0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31);
        // 2 layers: 2/8 = 0 and 7*2/8 = 1, so only layer 1
        assertThat(LlamaMix.useMoreBits(0, 2)).isFalse();
        assertThat(LlamaMix.useMoreBits(1, 2)).isTrue();
    }

    @Test
    void q4KmKeepsOutputAndTheUseMoreBitsLayersOfAttnVAndFfnDownAtQ6K() {
        Map<String, String> got = types(TypePolicy.choose(mix(FileType.MOSTLY_Q4_K_M), facts(2, 4, 2),
                llama(2, 256, 128, 256, true), false, false));
        // llama.cpp's order: tensors outside a layer first (by name), then layer by layer
        assertThat(got.keySet()).startsWith("output.weight", "output_norm.weight", "token_embd.weight",
                "blk.0.attn_k.weight", "blk.0.attn_norm.weight", "blk.0.attn_output.weight");
        assertThat(got).containsEntry("output.weight", "q6_K")          // output: Q6_K
                .containsEntry("token_embd.weight", "q4_K")              // not tied: the default
                .containsEntry("output_norm.weight", "f32")              // 1-D: as stored
                .containsEntry("blk.0.attn_v.weight", "q4_K")            // use_more_bits(0, 2) false
                .containsEntry("blk.1.attn_v.weight", "q6_K")            // use_more_bits(1, 2) true
                .containsEntry("blk.0.ffn_down.weight", "q4_K")
                .containsEntry("blk.1.ffn_down.weight", "q6_K")
                .containsEntry("blk.1.attn_q.weight", "q4_K");
    }

    @Test
    void tiedEmbeddingsAreTheOutputTensor() {
        // no output.weight: token_embd gets the output rule (Q6_K) instead of the default
        Map<String, String> got = types(TypePolicy.choose(mix(FileType.MOSTLY_Q4_0), facts(1, 4, 2),
                llama(1, 256, 128, 256, false), false, false));
        assertThat(got).containsEntry("token_embd.weight", "q6_K").containsEntry("blk.0.attn_v.weight", "q4_0");
    }

    @Test
    void theOutputOfAVeryLowBitTypeIsQ5KAndItsEmbeddingsQ2K() {
        List<TypePolicy.Choice> c = TypePolicy.choose(mix(FileType.MOSTLY_IQ2_XXS), facts(2, 4, 2),
                llama(2, 256, 128, 256, true), false, true);
        Map<String, String> got = types(c);
        assertThat(got).containsEntry("output.weight", "q5_K").containsEntry("token_embd.weight", "q2_K")
                // gqa 2 < 4: attn_v q2_K; ffn_down: i < 2/8 = 0 never, so the default
                .containsEntry("blk.0.attn_v.weight", "q2_K").containsEntry("blk.0.ffn_down.weight", "iq2_xxs")
                .containsEntry("blk.1.ffn_up.weight", "iq2_xxs");
        // llama.cpp needs an imatrix for iq2_xxs tensors, not for token_embd or output (nor q2_K)
        assertThat(c).filteredOn(x -> x.tensor().name().equals("blk.1.ffn_up.weight"))
                .extracting(TypePolicy.Choice::imatrix).containsExactly(TypePolicy.Need.REQUIRED);
        assertThat(c).filteredOn(x -> x.tensor().name().equals("token_embd.weight"))
                .extracting(TypePolicy.Choice::imatrix).containsExactly(TypePolicy.Need.NONE);
    }

    @Test
    void iq2SFileTypeDefaultsToIq2XsAndIq2MToIq2S() {
        List<TypePolicy.Tensor> one = List.of(t("blk.0.ffn_up.weight", 4, 256));
        assertThat(types(TypePolicy.choose(mix(FileType.MOSTLY_IQ2_S), facts(1, 1, 1), one, false, true)))
                .containsEntry("blk.0.ffn_up.weight", "iq2_xs");
        assertThat(types(TypePolicy.choose(mix(FileType.MOSTLY_IQ2_M), facts(1, 1, 1), one, false, true)))
                .containsEntry("blk.0.ffn_up.weight", "iq2_s");
        // the ggml type itself: exactly iq2_s, which ggml makes without an imatrix (llama.cpp would not)
        List<TypePolicy.Choice> exact = TypePolicy.choose(new Target.Exact(GgmlType.IQ2_S), facts(1, 1, 1), one, false, false);
        assertThat(types(exact)).containsEntry("blk.0.ffn_up.weight", "iq2_s");
        assertThat(exact.getFirst().imatrix()).isEqualTo(TypePolicy.Need.ADVISED);
        assertThat(TypePolicy.choose(new Target.Exact(GgmlType.IQ2_XXS), facts(1, 1, 1), one, false, false)
                .getFirst().imatrix()).isEqualTo(TypePolicy.Need.REQUIRED);
    }

    @Test
    void q3KmGivesTheFirstTwoAttnVQ5K() {
        Map<String, String> got = types(TypePolicy.choose(mix(FileType.MOSTLY_Q3_K_M), facts(4, 4, 4),
                llama(4, 256, 256, 256, true), false, false));
        assertThat(got).containsEntry("blk.0.attn_v.weight", "q5_K").containsEntry("blk.1.attn_v.weight", "q5_K")
                .containsEntry("blk.2.attn_v.weight", "q4_K")
                // ffn_down: i < 4/16 = 0 never; not falcon: q4_K
                .containsEntry("blk.0.ffn_down.weight", "q4_K")
                .containsEntry("blk.0.attn_output.weight", "q4_K")
                .containsEntry("blk.0.attn_q.weight", "q3_K");
    }

    @Test
    void a70BLlamaGetsQ5KAttnV() {
        // 80 layers, 64 heads, 8 kv heads: LLM_TYPE_70B; Q4_K_S gives attn_v 4+ Q4_K, bumped to Q5_K
        List<TypePolicy.Tensor> m = List.of(t("blk.10.attn_v.weight", 1024, 8192), t("blk.11.attn_v.weight", 1024, 8192),
                t("blk.12.attn_v.weight", 1024, 8192), t("blk.13.attn_v.weight", 1024, 8192),
                t("blk.14.attn_v.weight", 1024, 8192));
        assertThat(types(TypePolicy.choose(mix(FileType.MOSTLY_Q4_K_S), new ModelFacts("llama", 80, 0, 64, 8), m, false, false)))
                .containsEntry("blk.14.attn_v.weight", "q5_K");
        // the same counts of a 7B-sized model: the fifth attn_v keeps Q4_K
        assertThat(types(TypePolicy.choose(mix(FileType.MOSTLY_Q4_K_S), new ModelFacts("llama", 32, 0, 32, 8), m, false, false)))
                .containsEntry("blk.13.attn_v.weight", "q5_K").containsEntry("blk.14.attn_v.weight", "q4_K");
    }

    @Test
    void mxfp4MoeMakesExpertsMxfp4AndTheRestQ8_0() {
        List<TypePolicy.Tensor> m = List.of(t("output.weight", 256, 256), t("token_embd.weight", 256, 256),
                t("blk.0.ffn_up_exps.weight", 8, 512, 256), t("blk.0.attn_q.weight", 256, 256));
        Map<String, String> got = types(TypePolicy.choose(mix(FileType.MOSTLY_MXFP4_MOE),
                new ModelFacts("llama", 1, 8, 4, 4), m, false, false));
        assertThat(got).containsEntry("output.weight", "q8_0").containsEntry("token_embd.weight", "q8_0")
                .containsEntry("blk.0.ffn_up_exps.weight", "mxfp4").containsEntry("blk.0.attn_q.weight", "q8_0");
    }

    @Test
    void expertFfnDownTakesItsLayerFromTheName() {
        // Q4_K_M with 8 experts, 8 layers: use_more_bits(i, 8) for i = 0 (< 1), 7 (>= 7), 3 ((3-1)%3 == 2)
        List<TypePolicy.Tensor> m = new ArrayList<>();
        for (int i : new int[]{3, 0, 5}) m.add(t("blk." + i + ".ffn_down_exps.weight", 8, 256, 512));
        Map<String, String> got = types(TypePolicy.choose(mix(FileType.MOSTLY_Q4_K_M), new ModelFacts("llama", 8, 8, 4, 4),
                m, false, false));
        assertThat(got).containsEntry("blk.0.ffn_down_exps.weight", "q6_K").containsEntry("blk.3.ffn_down_exps.weight", "q6_K")
                .containsEntry("blk.5.ffn_down_exps.weight", "q4_K");
        // a layer past block_count is the file's fault
        assertThatThrownBy(() -> TypePolicy.choose(mix(FileType.MOSTLY_Q4_K_M), new ModelFacts("llama", 4, 8, 4, 4),
                m, false, false)).isInstanceOf(MalformedFileException.class).hasMessageContaining("blk.5.ffn_down_exps.weight");
    }

    @Test
    void rowsThatDoNotFitFallBackAsLlamaCppDoes() {
        List<TypePolicy.Tensor> m = List.of(t("blk.0.ffn_up.weight", 4, 96), t("blk.0.ffn_gate.weight", 4, 100));
        List<TypePolicy.Choice> c = TypePolicy.choose(mix(FileType.MOSTLY_Q4_K_S), facts(1, 1, 1), m, false, false);
        // 96 % 256 != 0: Q4_K -> Q5_0 (32 divides 96); 100: neither, so F16
        assertThat(types(c)).containsEntry("blk.0.ffn_up.weight", "q5_0").containsEntry("blk.0.ffn_gate.weight", "f16");
        assertThat(c).allMatch(TypePolicy.Choice::fellBack);
        // Q1_0 (128) has no fallback: llama.cpp stops
        assertThatThrownBy(() -> TypePolicy.choose(mix(FileType.MOSTLY_Q1_0), facts(1, 1, 1), m, false, false))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("no fallback for q1_0");
        // --pure takes no fallback
        assertThatThrownBy(() -> TypePolicy.choose(mix(FileType.MOSTLY_Q4_K_S), facts(1, 1, 1), m, true, false))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("--pure");
    }

    @Test
    void pureTakesTheDefaultEverywhereEligible() {
        Map<String, String> got = types(TypePolicy.choose(mix(FileType.MOSTLY_Q4_K_M), facts(2, 4, 2),
                llama(2, 256, 128, 256, true), true, false));
        assertThat(got).containsEntry("output.weight", "q4_K").containsEntry("blk.1.attn_v.weight", "q4_K")
                .containsEntry("output_norm.weight", "f32");
    }

    @Test
    void onlyTensorsWithTwoRealDimensionsAndAWeightNameAreQuantized() {
        List<TypePolicy.Tensor> m = List.of(
                t("blk.0.attn_q.weight", 1, 256),        // ne = [256, 1]: ggml_n_dims is 1
                t("blk.0.attn_q.bias", 4, 256),          // not *weight
                t("blk.0.ffn_gate_inp.weight", 8, 256),  // expert gating
                t("position_embd.weight", 16, 256),
                t("abcde", 4, 256),                      // 5 characters: llama.cpp's rfind quirk says "weight"
                t("a.weight", 4, 256));
        List<TypePolicy.Choice> c = TypePolicy.choose(mix(FileType.MOSTLY_Q8_0), facts(1, 1, 1), m, false, false);
        Map<String, Boolean> quantized = new LinkedHashMap<>();
        for (TypePolicy.Choice x : c) quantized.put(x.tensor().name(), x.quantize());
        assertThat(quantized).containsEntry("blk.0.attn_q.weight", false).containsEntry("blk.0.attn_q.bias", false)
                .containsEntry("blk.0.ffn_gate_inp.weight", false).containsEntry("position_embd.weight", false)
                .containsEntry("abcde", true).containsEntry("a.weight", true);
    }

    @Test
    void aTensorAlreadyOfItsTypeIsCopied() {
        TypePolicy.Tensor q8 = new TypePolicy.Tensor("blk.0.attn_q.weight", Shape.of(4, 256), Optional.of(GgmlType.Q8_0), false);
        TypePolicy.Choice c = TypePolicy.choose(mix(FileType.MOSTLY_Q8_0), facts(1, 1, 1), List.of(q8), false, false).getFirst();
        assertThat(c.quantize()).isFalse();
        assertThat(c.type()).contains(GgmlType.Q8_0);
        // stored as another scheme's dtype (no ggml type): always encoded
        TypePolicy.Tensor fp8 = new TypePolicy.Tensor("w.weight", Shape.of(4, 256), Optional.empty(), false);
        assertThat(TypePolicy.choose(mix(FileType.MOSTLY_Q8_0), facts(1, 1, 1), List.of(fp8), false, false).getFirst().quantize())
                .isTrue();
    }

    @Test
    void keptTensorsStayAndDoNotCount() {
        List<TypePolicy.Tensor> m = new ArrayList<>(llama(2, 256, 128, 256, true));
        m.replaceAll(x -> x.name().equals("blk.0.attn_v.weight") ? new TypePolicy.Tensor(x.name(), x.shape(), x.stored(), true) : x);
        List<TypePolicy.Choice> c = TypePolicy.choose(mix(FileType.MOSTLY_Q4_K_M), facts(2, 4, 2), m, false, false);
        assertThat(c).filteredOn(x -> x.tensor().name().equals("blk.0.attn_v.weight"))
                .extracting(TypePolicy.Choice::quantize, TypePolicy.Choice::why).containsExactly(org.assertj.core.groups.Tuple.tuple(false, "--keep"));
        // the kept one is not counted: blk.1's attn_v is now the first counted (i = 0 of n = 2), not use_more_bits
        assertThat(types(c)).containsEntry("blk.1.attn_v.weight", "q4_K");
    }

    @Test
    void llamaOrderSortsByLayerNumberThenByName() {
        List<String> names = TypePolicy.inLlamaOrder(List.of(t("blk.10.a.weight", 1), t("blk.2.b.weight", 1),
                t("output.weight", 1), t("blk.2.a.weight", 1), t("token_embd.weight", 1))).stream()
                .map(TypePolicy.Tensor::name).toList();
        assertThat(names).containsExactly("output.weight", "token_embd.weight", "blk.2.a.weight", "blk.2.b.weight", "blk.10.a.weight");
        assertThat(LayerNames.parseLayer("blk. +7.x")).hasValue(7);
        assertThat(LayerNames.parseLayer("blk.x")).isEmpty();
    }

    @Test
    void theModelFactsComeFromTheGgufKeys() {
        Map<String, Object> kv = Map.of("general.architecture", "llama", "llama.block_count", 32L,
                "llama.attention.head_count", List.of(32L, 32L), "llama.attention.head_count_kv", 8L);
        ModelFacts f = ModelFacts.of(kv, List.of());
        assertThat(f).isEqualTo(new ModelFacts("llama", 32, 0, 32, 8));
        assertThat(f.gqa()).isEqualTo(4);
        // no keys: layers from the names, no heads
        assertThat(ModelFacts.of(Map.of(), List.of("blk.0.x", "blk.5.y", "z"))).isEqualTo(new ModelFacts("", 6, 0, 0, 0));
    }
}
