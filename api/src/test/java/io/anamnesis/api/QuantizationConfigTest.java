package io.anamnesis.api;

import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.json.Json;
import io.anamnesis.api.config.QuantizationConfig;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class QuantizationConfigTest {
    static ClaimContext context(MemoryArchive archive) {
        return new ClaimContext(archive, ParseLimits.defaults());
    }

    @Test
    void jsonParsesTheValuesAConfigHolds() {
        Object v = Json.parse("{\"bits\": 4, \"sym\": true, \"x\": null, \"bs\": [128, 128], \"s\": \"a\\\"b\"}", 8);
        assertThat(v).isEqualTo(Map.of("bits", 4.0, "sym", true, "x", Json.NULL, "bs", List.of(128.0, 128.0), "s", "a\"b"));
        assertThatThrownBy(() -> Json.parse("{\"a\": [[[1]]]}", 2)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Json.parse("{\"a\": 1} x", 8)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theConfigInTheMetadataIsReadWithItsDeclaredMethod() {
        var awq = QuantizationConfig.find(context(new MemoryArchive()
                .meta("quantization_config", "{\"w_bit\": 4, \"q_group_size\": \"128\", \"version\": \"gemm\"}"))).orElseThrow();
        assertThat(awq.quantMethod()).isEmpty();
        assertThat(awq.integer("q_group_size")).contains(128);
        assertThat(awq.text("version")).contains("gemm");
        assertThat(awq.origin()).isEqualTo("__metadata__ quantization_config");

        var declared = QuantizationConfig.find(context(new MemoryArchive()
                .meta("quantization_config", "{\"quant_method\": \"GPTQ\", \"w_bit\": 4, \"desc_act\": \"false\"}"))).orElseThrow();
        assertThat(declared.quantMethod()).contains("gptq");
        assertThat(declared.bool("desc_act")).contains(false);
        assertThat(declared.hasAny("x", "w_bit")).isTrue();
        assertThat(declared.hasAny("bits")).isFalse();
    }

    @Test
    void malformedConfigsAreTypedErrors() {
        assertThatThrownBy(() -> QuantizationConfig.find(context(new MemoryArchive().meta("quantization_config", "{bits: 4}"))))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("quantization_config");
        var c = QuantizationConfig.find(context(new MemoryArchive().meta("quantization_config", "{\"bits\": 4.5}"))).orElseThrow();
        assertThatThrownBy(() -> c.integer("bits")).isInstanceOf(MalformedFileException.class);
        assertThat(QuantizationConfig.find(context(new MemoryArchive()))).isEmpty();
    }
}
