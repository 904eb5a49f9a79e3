package io.anamnesis.api;

import io.anamnesis.api.testing.MemoryArchive;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.spi.Recovery;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** No silent non-recovery: what still looks quantized after every dequantizer has claimed. */
class UnrecoveredTest {
    /** An installed dequantizer of that scheme that recognizes nothing in these archives. */
    static Dequantizer installed(String scheme) {
        return new Dequantizer() {
            @Override
            public String scheme() {
                return scheme;
            }

            @Override
            public String description() {
                return scheme;
            }

            @Override
            public List<Recovery> claim(ClaimContext context) {
                return List.of();
            }
        };
    }

    static RecoveryPlan plan(MemoryArchive a, Dequantizer... installed) {
        return Anamnesis.of(List.of(), List.of(), List.of(installed)).plan(a, DType.BF16);
    }

    static final String CT_CONFIG = "{\"quant_method\": \"compressed-tensors\", \"format\": \"pack-quantized\"}";

    @Test
    void gptOssBlocksBesideScalesAreNotCopiedSilently() {
        MemoryArchive a = new MemoryArchive()
                .add("model.layers.0.mlp.experts.down_proj_blocks", DType.U8, Shape.of(1, 2, 1, 16), new byte[32])
                .add("model.layers.0.mlp.experts.down_proj_scales", DType.U8, Shape.of(1, 2, 1), new byte[2])
                .add("model.layers.0.mlp.experts.down_proj_bias", DType.BF16, Shape.of(1, 2), new byte[4]);
        RecoveryPlan plan = plan(a, installed("fp8"));
        assertThat(plan.problems()).singleElement().asString()
                .contains("model.layers.0.mlp.experts.down_proj_blocks").contains("mxfp4")
                .contains("io.anamnesis:anamnesis-quant-mxfp4");
        assertThatThrownBy(plan::requireComplete).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("down_proj_blocks");
    }

    @Test
    void aCompressedTensorsFileNamesItsOwnModuleNotFp8() {
        // the complaint: "add quant-fp8", which was installed
        MemoryArchive a = new MemoryArchive()
                .add("m.weight_packed", DType.I32, Shape.of(2, 1), new byte[8])
                .add("m.weight_scale", DType.BF16, Shape.of(2, 1), new byte[4])
                .add("m.weight_shape", DType.I64, Shape.of(2), new byte[16])
                .meta("quantization_config", CT_CONFIG);
        RecoveryPlan plan = plan(a, installed("fp8"));
        assertThat(plan.problems()).hasSize(2).allSatisfy(p -> assertThat(p)
                .contains("compressed-tensors").contains("io.anamnesis:anamnesis-quant-compressed-tensors")
                .doesNotContain("quant-fp8"));
        assertThat(plan.problems().getFirst()).contains("'m.weight_packed'");
    }

    @Test
    void naiveInt8WeightsGoByTheConfigsScheme() {
        MemoryArchive a = new MemoryArchive()
                .add("m.weight", DType.I8, Shape.of(2, 2), new byte[4])
                .add("m.weight_scale", DType.BF16, Shape.of(2, 1), new byte[4])
                .meta("quantization_config", "{\"quant_method\": \"compressed-tensors\", \"format\": \"int-quantized\"}");
        assertThat(plan(a, installed("fp8")).problems()).singleElement().asString()
                .contains("'m.weight_scale'").contains("looks like compressed-tensors data")
                .contains("anamnesis-quant-compressed-tensors");
    }

    @Test
    void anInstalledModuleIsNotNamedAsMissing() {
        // an FP8 weight without its scale: quant-fp8 is installed, so say what is wrong
        MemoryArchive a = new MemoryArchive()
                .add("lm_head.weight", DType.F8_E4M3, Shape.of(2, 2), new byte[4]);
        assertThat(plan(a, installed("fp8")).problems()).singleElement().asString()
                .contains("'lm_head.weight'").contains("the installed fp8 dequantizer did not recover it")
                .contains("scale is missing").doesNotContain("add ");
        assertThat(plan(a).problems()).singleElement().asString().contains("io.anamnesis:anamnesis-quant-fp8");
        // GPTQ or AWQ: only the one that is missing is named
        MemoryArchive g = new MemoryArchive().add("m.qweight", DType.I32, Shape.of(1, 1), new byte[4]);
        assertThat(plan(g, installed("gptq")).problems()).singleElement().asString()
                .contains("anamnesis-quant-awq").doesNotContain("anamnesis-quant-gptq");
        assertThat(plan(g, installed("gptq"), installed("awq")).problems()).singleElement().asString()
                .contains("the installed gptq and awq dequantizers did not recover it");
    }

    @Test
    void aConfigWhoseMethodNothingRecoveredIsAProblemWhenPayloadsLookPacked() {
        // optimum-quanto names nothing anamnesis knows; its int8 payload and the config give it away
        MemoryArchive a = new MemoryArchive()
                .add("m.weight._data", DType.I8, Shape.of(2, 2), new byte[4])
                .add("m.weight._scale", DType.F32, Shape.of(2, 1), new byte[8])
                .meta("quantization_config", "{\"quant_method\": \"quanto\"}");
        assertThat(plan(a, installed("fp8")).problems()).singleElement().asString()
                .contains("'m.weight._data'").contains("quanto").contains("add a module that recovers quanto");
        // a file anamnesis already recovered keeps no claim on its old config
        MemoryArchive recovered = new MemoryArchive()
                .add("m.weight._data", DType.I8, Shape.of(2, 2), new byte[4])
                .meta("quantization_config", "{\"quant_method\": \"quanto\"}")
                .meta(RecoveryPlan.RECOVERED_FROM_KEY, "quanto");
        assertThat(plan(recovered).problems()).isEmpty();
    }

    @Test
    void aMethodNameThatIsNoIdentifierIsNotRepeated() {
        MemoryArchive a = new MemoryArchive()
                .add("m.qweight", DType.I32, Shape.of(1, 1), new byte[4])
                .meta("quantization_config", "{\"quant_method\": \"" + "x".repeat(100_000) + "\"}");
        assertThat(plan(a).problems()).singleElement().asString().hasSizeLessThan(400).contains("gptq or awq");
    }

    @Test
    void denseWeightsBesideScalesAndPlainFilesAreFine() {
        // a frozen (not compressed) checkpoint: BF16 weight, its scale a leftover
        MemoryArchive frozen = new MemoryArchive()
                .add("m.weight", DType.BF16, Shape.of(2, 2), new byte[8])
                .add("m.weight_scale", DType.BF16, Shape.of(2, 1), new byte[4])
                .meta("quantization_config", CT_CONFIG);
        assertThat(plan(frozen).problems()).isEmpty();
        // int tensors in a plain file with no quantization config
        MemoryArchive plain = new MemoryArchive()
                .add("position_ids", DType.I64, Shape.of(1, 8), new byte[64])
                .add("tokens", DType.I32, Shape.of(2, 4), new byte[32])
                .add("f8_codes", DType.F8_E4M3, Shape.of(4), new byte[4]);
        assertThat(plan(plain).problems()).isEmpty();
    }
}
