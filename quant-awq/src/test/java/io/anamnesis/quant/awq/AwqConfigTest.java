package io.anamnesis.quant.awq;

import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** The AWQ side of the rules GptqConfig applies too: both modules must name every config alike. */
class AwqConfigTest {
    private static String methodOf(String quantizationConfig) {
        MemoryArchive a = new MemoryArchive().meta("quantization_config", quantizationConfig);
        return AwqConfig.find(new ClaimContext(a, ParseLimits.defaults())).orElseThrow().method();
    }

    @Test
    void quantMethodDecidesAndToolKeysNameTheMethodOtherwise() {
        assertThat(methodOf("{\"w_bit\": 4, \"q_group_size\": \"128\", \"version\": \"gemm\"}")).isEqualTo("awq");
        assertThat(methodOf("{\"quant_method\": \"GPTQ\", \"w_bit\": 4, \"desc_act\": \"false\"}")).isEqualTo("gptq");
        assertThat(methodOf("{\"bits\": 4, \"damp_percent\": 0.01}")).isEqualTo("gptq");
        assertThat(methodOf("{\"bits\": 4}")).isEmpty();
    }

    @Test
    void autoAwqsOwnFileIsAnAwqConfig(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("quant_config.json"), "{\"zero_point\": true, \"bits\": 4}");
        MemoryArchive a = new MemoryArchive().at(dir.resolve("model.safetensors"));
        var own = AwqConfig.find(new ClaimContext(a, ParseLimits.defaults())).orElseThrow();
        assertThat(own.method()).isEqualTo("awq");
        assertThat(own.config().origin()).isEqualTo("quant_config.json");
        assertThat(own.config().integer("bits")).contains(4);
    }
}
