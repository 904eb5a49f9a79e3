package io.anamnesis.quant.gptq;

import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class GptqConfigTest {
    static GptqConfig find(MemoryArchive archive) {
        return GptqConfig.find(new ClaimContext(archive, ParseLimits.defaults())).orElseThrow();
    }

    @Test
    void quantMethodDecidesAndToolKeysNameTheMethodOtherwise() {
        assertThat(find(new MemoryArchive().meta("quantization_config",
                "{\"w_bit\": 4, \"q_group_size\": \"128\", \"version\": \"gemm\"}")).method()).isEqualTo("awq");
        assertThat(find(new MemoryArchive().meta("quantization_config",
                "{\"quant_method\": \"GPTQ\", \"w_bit\": 4, \"desc_act\": \"false\"}")).method()).isEqualTo("gptq");
        assertThat(find(new MemoryArchive().meta("quantization_config", "{\"bits\": 4, \"damp_percent\": 0.01}")).method())
                .isEqualTo("gptq");
        assertThat(find(new MemoryArchive().meta("quantization_config", "{\"bits\": 4}")).method()).isEmpty();
    }

    @Test
    void autoGptqFlatKeysAreAGptqConfig() {
        var flat = find(new MemoryArchive().meta("gptq_bits", "8").meta("gptq_group_size", "-1"));
        assertThat(flat.method()).isEqualTo("gptq");
        assertThat(flat.config().integer("bits")).contains(8);
        assertThat(flat.config().integer("group_size")).contains(-1);
    }
}
