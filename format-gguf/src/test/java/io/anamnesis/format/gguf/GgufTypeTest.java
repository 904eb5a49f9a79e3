package io.anamnesis.format.gguf;

import io.anamnesis.api.DType;
import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Map;

import static java.util.Map.entry;
import static org.assertj.core.api.Assertions.assertThat;

class GgufTypeTest {
    static final int QK_K = 256;

    /** Block bytes as the sums of the block structs' fields in ggml-common.h (f16 = 2 bytes). */
    static final Map<String, Integer> STRUCT_BYTES = Map.ofEntries(
            entry("Q4_0", 2 + 32 / 2), entry("Q4_1", 2 + 2 + 32 / 2),
            entry("Q5_0", 2 + 4 + 32 / 2), entry("Q5_1", 2 + 2 + 4 + 32 / 2),
            entry("Q8_0", 2 + 32), entry("Q8_1", 2 + 2 + 32),
            entry("Q2_K", QK_K / 16 + QK_K / 4 + 2 + 2), entry("Q3_K", QK_K / 8 + QK_K / 4 + 12 + 2),
            entry("Q4_K", 2 + 2 + 12 + QK_K / 2), entry("Q5_K", 2 + 2 + 12 + QK_K / 8 + QK_K / 2),
            entry("Q6_K", QK_K / 2 + QK_K / 4 + QK_K / 16 + 2), entry("Q8_K", 4 + QK_K + QK_K / 16 * 2),
            entry("IQ2_XXS", 2 + QK_K / 8 * 2), entry("IQ2_XS", 2 + QK_K / 8 * 2 + QK_K / 32),
            entry("IQ3_XXS", 2 + 3 * QK_K / 8), entry("IQ1_S", 2 + QK_K / 8 + QK_K / 32 * 2),
            entry("IQ4_NL", 2 + 32 / 2), entry("IQ3_S", 2 + QK_K / 4 + QK_K / 32 + QK_K / 8 + QK_K / 64),
            entry("IQ2_S", 2 + QK_K / 4 + QK_K / 32 + QK_K / 32), entry("IQ4_XS", 2 + 2 + QK_K / 64 + QK_K / 2),
            entry("IQ1_M", QK_K / 8 + QK_K / 16 + QK_K / 32), entry("TQ1_0", (QK_K - 4 * QK_K / 64) / 5 + QK_K / 64 + 2),
            entry("TQ2_0", QK_K / 4 + 2), entry("MXFP4", 1 + 32 / 2), entry("NVFP4", 4 + 64 / 2),
            entry("Q1_0", 2 + 128 / 8), entry("Q2_0", 2 + 64 / 4));

    @Test
    void blockSizesAreTheSumsOfGgmlsBlockStructs() {
        for (GgufType t : GgufType.ALL) {
            if (!t.isBlock()) continue;
            assertThat(t.blockBytes()).as(t.name()).isEqualTo(STRUCT_BYTES.get(t.name()));
            assertThat(t.dtype()).isEqualTo(new DType(t.name(), DType.Kind.QUANTIZED, t.blockElements(), t.blockBytes()));
        }
        assertThat(GgufType.ALL.stream().filter(GgufType::isBlock).count()).isEqualTo(STRUCT_BYTES.size());
    }

    @Test
    void scalarTypesAreTheStandardDtypes() {
        assertThat(GgufType.byId(0).orElseThrow().dtype()).isEqualTo(DType.F32);
        assertThat(GgufType.byId(1).orElseThrow().dtype()).isEqualTo(DType.F16);
        assertThat(GgufType.byId(24).orElseThrow().dtype()).isEqualTo(DType.I8);
        assertThat(GgufType.byId(25).orElseThrow().dtype()).isEqualTo(DType.I16);
        assertThat(GgufType.byId(26).orElseThrow().dtype()).isEqualTo(DType.I32);
        assertThat(GgufType.byId(27).orElseThrow().dtype()).isEqualTo(DType.I64);
        assertThat(GgufType.byId(28).orElseThrow().dtype()).isEqualTo(DType.F64);
        assertThat(GgufType.byId(30).orElseThrow().dtype()).isEqualTo(DType.BF16);
        assertThat(GgufType.of(DType.BF16).orElseThrow().ggmlId()).isEqualTo(30);
        assertThat(GgufType.of(DType.U8)).isEmpty();
    }

    @Test
    void idsAndNamesAreUniqueAndRemovedIdsAreUnknown() {
        var ids = new HashSet<Integer>();
        var names = new HashSet<String>();
        for (GgufType t : GgufType.ALL) {
            assertThat(ids.add(t.ggmlId())).as("id " + t.ggmlId()).isTrue();
            assertThat(names.add(t.name())).as(t.name()).isTrue();
        }
        for (int removed : new int[]{4, 5, 31, 32, 33, 36, 37, 38}) assertThat(GgufType.byId(removed)).isEmpty();
        assertThat(GgufType.byId(43)).isEmpty();
        assertThat(GgufType.byId(-1)).isEmpty();
        assertThat(GgufType.byId(9).orElseThrow().name()).isEqualTo("Q8_1");
        assertThat(GgufType.byId(42).orElseThrow().blockElements()).isEqualTo(64);
        assertThat(GgufType.byName("q4_k").orElseThrow().ggmlId()).isEqualTo(12);
        assertThat(GgufType.byName("Q4_2")).isEmpty();
    }
}
