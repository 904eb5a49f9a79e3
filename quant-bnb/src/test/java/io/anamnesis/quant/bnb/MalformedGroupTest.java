package io.anamnesis.quant.bnb;

import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static io.anamnesis.quant.bnb.Fixtures.W;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class MalformedGroupTest {
    private static final String STATE = W + ".quant_state.bitsandbytes__nf4";

    private static MemoryArchive good() {
        return Fixtures.fourBit("nf4", 64, new long[]{128}, Fixtures.codes(128, 0), new float[]{1f, 2f});
    }

    private static void assertFails(MemoryArchive a, Class<? extends AnamnesisException> type, String tensor, String text) {
        assertThatThrownBy(() -> Fixtures.claim(a)).isInstanceOf(type)
                .satisfies(t -> assertThat(((AnamnesisException) t).tensor()).contains(tensor))
                .hasMessageContaining(text);
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "63", "65", "-64", "96", "16", "8192", "64.5", "\"64\"", "null"})
    void rejectsInvalidBlocksize(String blocksize) {
        MemoryArchive a = good().json(STATE, "{\"quant_type\": \"nf4\", \"blocksize\": " + blocksize
                + ", \"dtype\": \"float32\", \"shape\": [128]}");
        assertFails(a, MalformedFileException.class, STATE, "blocksize");
    }

    @Test
    void rejectsMissingBlocksize() {
        MemoryArchive a = good().json(STATE, "{\"quant_type\": \"nf4\", \"dtype\": \"float32\", \"shape\": [128]}");
        assertFails(a, MalformedFileException.class, STATE, "blocksize");
    }

    @Test
    void rejectsMissingAbsmax() {
        assertFails(good().remove(W + ".absmax"), MalformedFileException.class, W, W + ".absmax");
    }

    @Test
    void rejectsMissingQuantMap() {
        assertFails(good().remove(W + ".quant_map"), MalformedFileException.class, W, W + ".quant_map");
    }

    @Test
    void rejectsQuantStateWithoutWeight() {
        assertFails(good().remove(W), MalformedFileException.class, STATE, W);
    }

    @Test
    void rejectsAbsmaxThatDoesNotCoverTheBlocks() {
        // 128 elements in blocks of 64 need ceil(128/64) = 2 absmax values.
        assertFails(good().f32(W + ".absmax", 1f, 2f, 3f), MalformedFileException.class, W + ".absmax", "2");
        assertFails(good().f32(W + ".absmax", 1f), MalformedFileException.class, W + ".absmax", "2");
    }

    @Test
    void absmaxCountRoundsUpForAShortLastBlock() {
        MemoryArchive a = Fixtures.fourBit("nf4", 64, new long[]{129}, Fixtures.codes(129, 0), new float[]{1f, 2f});
        assertFails(a, MalformedFileException.class, W + ".absmax", "3");
    }

    @Test
    void rejectsQuantMapThatIsNotSixteenEntries() {
        assertFails(good().f32(W + ".quant_map", new float[15]), MalformedFileException.class, W + ".quant_map", "16");
    }

    @Test
    void rejectsBadJson() {
        assertFails(good().json(STATE, "{\"quant_type\": \"nf4\", \"blocksize\": 64,"), MalformedFileException.class,
                STATE, "JSON");
        assertFails(good().json(STATE, "[1, 2]"), MalformedFileException.class, STATE, "object");
        assertFails(good().json(STATE, "{\"quant_type\": \"nf4\", \"blocksize\": 64, \"dtype\": \"float32\", "
                + "\"shape\": [128]} trailing"), MalformedFileException.class, STATE, "JSON");
        assertFails(good().u8(STATE, new byte[]{'{', (byte) 0xC3, '}'}), MalformedFileException.class, STATE, "UTF-8");
    }

    @Test
    void rejectsShapeThatDoesNotMatchThePackedBytes() {
        // 64 packed bytes hold 127 or 128 codes, not 130.
        MemoryArchive a = good().json(STATE, "{\"quant_type\": \"nf4\", \"blocksize\": 64, \"dtype\": \"float32\", "
                + "\"shape\": [13, 10]}");
        assertFails(a, MalformedFileException.class, W, "64 bytes");
    }

    @Test
    void rejectsNegativeOrNonIntegerShape() {
        assertFails(good().json(STATE, "{\"quant_type\": \"nf4\", \"blocksize\": 64, \"dtype\": \"float32\", "
                + "\"shape\": [-128]}"), MalformedFileException.class, STATE, "shape");
        assertFails(good().json(STATE, "{\"quant_type\": \"nf4\", \"blocksize\": 64, \"dtype\": \"float32\", "
                + "\"shape\": 128}"), MalformedFileException.class, STATE, "shape");
    }

    @Test
    void rejectsQuantTypeThatContradictsTheName() {
        assertFails(good().json(STATE, "{\"quant_type\": \"fp4\", \"blocksize\": 64, \"dtype\": \"float32\", "
                + "\"shape\": [128]}"), MalformedFileException.class, STATE, "fp4");
    }

    @Test
    void unknownQuantTypeIsUnsupported() {
        assertFails(good().json(STATE, "{\"quant_type\": \"int4\", \"blocksize\": 64, \"dtype\": \"float32\", "
                + "\"shape\": [128]}"), UnsupportedFeatureException.class, STATE, "int4");
    }

    @Test
    void rejectsNestedTensorsWithoutNestedKeys() {
        assertFails(good().f32(W + ".nested_absmax", 1f), MalformedFileException.class, W + ".nested_absmax", "nested");
    }

    @Test
    void rejectsNestedKeysWithoutNestedTensors() {
        MemoryArchive a = good()
                .add(W + ".absmax", DType.U8, new long[]{2}, new byte[]{1, 2})
                .json(STATE, "{\"quant_type\": \"nf4\", \"blocksize\": 64, \"dtype\": \"float32\", \"shape\": [128], "
                        + "\"nested_blocksize\": 256, \"nested_dtype\": \"float32\", \"nested_offset\": 0.5}");
        assertFails(a, MalformedFileException.class, W, W + ".nested_absmax");
        a.f32(W + ".nested_absmax", 1f);
        assertFails(a, MalformedFileException.class, W, W + ".nested_quant_map");
        a.f32(W + ".nested_quant_map", new float[255]);
        assertFails(a, MalformedFileException.class, W + ".nested_quant_map", "256");
        a.f32(W + ".nested_quant_map", new float[256]).f32(W + ".absmax", 1f, 2f);
        assertFails(a, MalformedFileException.class, W + ".absmax", "U8");
        a.add(W + ".absmax", DType.U8, new long[]{2}, new byte[]{1, 2}).f32(W + ".nested_absmax", 1f, 2f);
        assertFails(a, MalformedFileException.class, W + ".nested_absmax", "1 elements");
        a.f32(W + ".nested_absmax", 1f);
        assertThat(Fixtures.claim(a)).hasSize(1);
    }

    @Test
    void rejectsTwoQuantStatesForOneWeight() {
        MemoryArchive a = good().json(W + ".quant_state.bitsandbytes__fp4", "{\"quant_type\": \"fp4\", "
                + "\"blocksize\": 64, \"dtype\": \"float32\", \"shape\": [128]}");
        assertFails(a, MalformedFileException.class, W, "both");
    }

    @Test
    void rejectsCompanionsWithoutQuantState() {
        assertFails(good().remove(STATE), MalformedFileException.class, W, "quant state");
    }

    @Test
    void oversizedQuantStateIsALimit() {
        ParseLimits d = ParseLimits.defaults();
        ParseLimits tight = new ParseLimits(d.maxHeaderBytes(), d.maxTensors(), d.maxRank(), d.maxMetadataEntries(),
                40, d.maxArrayLength(), d.maxNestingDepth(), d.maxPickleBytes(), d.maxPickleValues(),
                d.maxInflatedBytes(), d.maxInflationRatio());
        assertThatThrownBy(() -> Fixtures.claim(good(), tight)).isInstanceOf(LimitExceededException.class);
    }

    @Test
    void deepJsonIsALimit() {
        ParseLimits tight = ParseLimits.defaults().withMaxNestingDepth(3);
        MemoryArchive a = good().json(STATE, "{\"quant_type\": \"nf4\", \"blocksize\": 64, \"dtype\": \"float32\", "
                + "\"shape\": [128], \"x\": [[[[1]]]]}");
        assertThatThrownBy(() -> Fixtures.claim(a, tight)).isInstanceOf(LimitExceededException.class);
    }

    @Test
    void archiveWithoutBitsandbytesTensorsClaimsNothing() {
        MemoryArchive a = new MemoryArchive().f32("model.norm.weight", 1f, 2f).f32("lm_head.absmax_like", 3f);
        assertThat(Fixtures.claim(a)).isEmpty();
    }
}
