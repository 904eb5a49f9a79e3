package io.anamnesis.quant.bnb;

import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.Role;
import io.anamnesis.api.Shape;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class Int8RowsTest {
    private static final String P = "model.layers.0.mlp.down_proj";
    private static final String W = P + ".weight";

    /** 7.874015718698502e-3 rounded to float32, worked out by hand: 0x3C010204. */
    private static final float K = Float.intBitsToFloat(0x3C01_0204);

    @Test
    void constantIsTheReferenceLiteralRoundedToFloat32() {
        assertThat(Float.floatToRawIntBits(Int8Rows.INV_127)).isEqualTo(0x3C01_0204);
    }

    private static byte[] weights(int rows, int cols) {
        byte[] w = new byte[rows * cols];
        for (int i = 0; i < w.length; i++) w[i] = (byte) (i * 37 + i / 3);
        return w;
    }

    private static float[] scales(int rows) {
        float[] s = new float[rows];
        for (int r = 0; r < rows; r++) s[r] = 0.0137f * (r + 1) + r * r * 0.51f;
        return s;
    }

    private static MemoryArchive checkpoint(int rows, int cols) {
        return new MemoryArchive()
                .add(W, DType.I8, new long[]{rows, cols}, weights(rows, cols))
                .f32(P + ".SCB", scales(rows));
    }

    private static float[] expected(int rows, int cols) {
        byte[] w = weights(rows, cols);
        float[] s = scales(rows);
        float[] out = new float[rows * cols];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                float scaled = (float) w[r * cols + c] * s[r];
                out[r * cols + c] = scaled * K;
            }
        }
        return out;
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 8, 33, 511, 512, 1000})
    void weightTimesRowScaleTimesConstantAtEveryTarget(int cols) {
        int rows = 5;
        MemoryArchive a = checkpoint(rows, cols);
        float[] want = expected(rows, cols);
        for (DType t : List.of(DType.F32, DType.BF16, DType.F16)) {
            assertThat(Fixtures.recover(a, t)).as("%s", t).isEqualTo(Fixtures.encode(want, t));
            assertThat(Fixtures.recoverInChunks(a, t, 2)).as("%s by rows", t).isEqualTo(Fixtures.encode(want, t));
        }
    }

    @Test
    void orderOfMultipliesMatters() {
        // The test above would catch SCB/127 first: at least one element differs.
        byte[] w = weights(5, 1000);
        float[] s = scales(5);
        boolean differs = false;
        for (int i = 0; i < w.length && !differs; i++) {
            float s1 = s[i / 1000];
            differs = ((float) w[i] * s1) * K != (float) w[i] * (s1 * K);
        }
        assertThat(differs).isTrue();
    }

    @Test
    void claimsWeightAndScaleWithRoles() {
        Recovery r = Fixtures.only(checkpoint(4, 16));
        assertThat(r.outputName()).isEqualTo(W);
        assertThat(r.outputShape()).isEqualTo(Shape.of(4, 16));
        assertThat(r.description()).isEqualTo("bitsandbytes LLM.int8()");
        assertThat(r.kernel().granule()).isEqualTo(16);
        assertThat(r.inputs()).containsExactly(Map.entry(W, Role.QUANTIZED), Map.entry(P + ".SCB", Role.SCALE));
    }

    @Test
    void rowWeightFormatIsConsumed() {
        MemoryArchive a = checkpoint(4, 16).add(P + ".weight_format", DType.U8, new long[0], new byte[]{0});
        Recovery r = Fixtures.only(a);
        assertThat(r.inputs()).containsEntry(P + ".weight_format", Role.QUANT_STATE).hasSize(3);
        assertThat(Fixtures.recover(a, DType.F32)).isEqualTo(Fixtures.encode(expected(4, 16), DType.F32));
    }

    @Test
    void tiledWeightFormatIsUnsupported() {
        MemoryArchive a = checkpoint(4, 16).add(P + ".weight_format", DType.U8, new long[0], new byte[]{1});
        assertThatThrownBy(() -> Fixtures.claim(a)).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("col32");
    }

    @Test
    void unknownWeightFormatIsMalformed() {
        MemoryArchive a = checkpoint(4, 16).add(P + ".weight_format", DType.U8, new long[0], new byte[]{9});
        assertThatThrownBy(() -> Fixtures.claim(a)).isInstanceOf(MalformedFileException.class);
    }

    @Test
    void rejectsScaleWithoutWeight() {
        MemoryArchive a = checkpoint(4, 16).remove(W);
        assertThatThrownBy(() -> Fixtures.claim(a)).isInstanceOf(MalformedFileException.class)
                .satisfies(t -> assertThat(((AnamnesisException) t).tensor()).contains(P + ".SCB"));
    }

    @Test
    void rejectsScaleOfWrongLength() {
        MemoryArchive a = checkpoint(4, 16).f32(P + ".SCB", 1f, 2f, 3f);
        assertThatThrownBy(() -> Fixtures.claim(a)).isInstanceOf(MalformedFileException.class)
                .satisfies(t -> assertThat(((AnamnesisException) t).tensor()).contains(P + ".SCB"));
    }

    @Test
    void rejectsWeightThatIsNotI8Matrix() {
        MemoryArchive a = checkpoint(4, 16).add(W, DType.U8, new long[]{4, 16}, new byte[64]);
        assertThatThrownBy(() -> Fixtures.claim(a)).isInstanceOf(MalformedFileException.class)
                .satisfies(t -> assertThat(((AnamnesisException) t).tensor()).contains(W));
    }
}
