package io.anamnesis.cli;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;

import static io.anamnesis.cli.Runs.amn;
import static org.assertj.core.api.Assertions.assertThat;

class DiffCommandTest {
    @TempDir
    Path dir;

    @Test
    void theSameTensorsWithTheSameBitsExitZero() throws IOException {
        Path a = Fakes.write(dir, "a.fake", "ok");
        Path b = Fakes.write(dir, "b.fake", "ok");
        Runs.Run r = amn(Fakes.amn(), "diff", a.toString(), b.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("2 tensors in common: 2 identical, 0 differ; 0 only in a, 0 only in b");
    }

    @Test
    void differentValuesExitEightWithTheErrorFigures() throws IOException {
        Path a = Fakes.write(dir, "a.fake", "ok");
        Path b = Fakes.write(dir, "b.fake", "scaled");
        Runs.Run r = amn(Fakes.amn(), "diff", a.toString(), b.toString());
        assertThat(r.code()).as(r.err()).isEqualTo(8);
        // a: {0.25, -0.5, 0.75, 31.75}; b: twice that. errors 0.25, 0.5, 0.75, 31.75: MAE 33.25/4 = 8.3125,
        // RMSE sqrt(1008.9375/4) = 15.882, SNR 10 log10(1008.9375/1008.9375) = 0
        assertThat(r.out()).contains("differs  layer  [2, 2]  MAE 8.313, RMSE 15.88, max |error| 31.75, SNR 0.00 dB")
                .contains("1 identical, 1 differ");
        JsonNode json = amn(Fakes.amn(), "diff", "--json", a.toString(), b.toString()).json();
        assertThat(json.get("identical").asBoolean()).isFalse();
        JsonNode layer = json.get("tensors").get(0);
        assertThat(layer.get("name").asText()).isEqualTo("layer");
        assertThat(layer.get("status").asText()).isEqualTo("differs");
        assertThat(layer.get("a").get("recovered_from").asText()).isEqualTo("toy int8 x scale");
        assertThat(layer.get("loss").get("max_abs_error").asDouble()).isEqualTo(31.75);
        assertThat(json.get("tensors").get(1).get("status").asText()).isEqualTo("identical");
        assertThat(json.get("total").get("values").asLong()).isEqualTo(4);
    }

    @Test
    void tensorsOnlyOneFileHasAreListedAndDiffer() throws IOException {
        Path a = Fakes.write(dir, "a.fake", "ok");
        Path b = Fakes.write(dir, "b.fake", "badgroup");
        Runs.Run r = amn(Fakes.withoutDequantizers(), "diff", a.toString(), b.toString());
        assertThat(r.code()).as(r.err()).isEqualTo(8);
        assertThat(r.out()).contains("only in b  bad.q").contains("3 tensors in common: 3 identical");
    }

    @Test
    void noTensorInCommonIsAUsageError() throws IOException {
        Path a = Fakes.write(dir, "a.fake", "ok");
        Path b = Fakes.write(dir, "b.fake", "plain");
        Runs.Run r = amn(Fakes.amn(), "diff", a.toString(), b.toString());
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).contains("have no tensor name in common");
        assertThat(r.out()).isEmpty();
    }

    /** One F32 [4] tensor "w" of the given values, in a plain safetensors file. */
    private Path floats(String name, float... v) throws IOException {
        String json = "{\"w\":{\"dtype\":\"F32\",\"shape\":[" + v.length + "],\"data_offsets\":[0," + 4 * v.length + "]}}";
        byte[] j = json.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        var b = java.nio.ByteBuffer.allocate(8 + j.length + 4 * v.length).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        b.putLong(j.length).put(j);
        for (float f : v) b.putFloat(f);
        return java.nio.file.Files.write(dir.resolve(name), b.array());
    }

    /**
     * b infinite where a is finite: the error is infinite, so the SNR is -inf (it printed "inf",
     * which reads as nothing lost) and the line says why; a NaN error gives nan.
     */
    @Test
    void anInfiniteOrNanErrorIsSaidSoNotShownAsNothingLost() throws IOException {
        Path a = floats("a.safetensors", 1f, 2f, 3f, 4f);
        Path inf = floats("inf.safetensors", 1f, Float.POSITIVE_INFINITY, 3f, 4f);
        Runs.Run r = amn(SpecialFilesTest.INSTALLED, "diff", a.toString(), inf.toString());
        assertThat(r.code()).as(r.err()).isEqualTo(8);
        assertThat(r.out()).contains("SNR -inf dB").contains("some values of b are inf or NaN where the original is finite")
                .doesNotContain("SNR inf dB");
        Path nan = floats("nan.safetensors", 1f, Float.NaN, 3f, 4f);
        Runs.Run n = amn(SpecialFilesTest.INSTALLED, "diff", a.toString(), nan.toString());
        assertThat(n.code()).as(n.err()).isEqualTo(8);
        assertThat(n.out()).contains("SNR nan dB").contains("some values of b are inf or NaN");
        assertThat(Text.db(Double.POSITIVE_INFINITY)).isEqualTo("inf");
        assertThat(Text.db(12.345)).isEqualTo("12.35");
    }

    @Test
    void helpListsExitCodeEight() {
        Runs.Run r = amn(Fakes.amn(), "--help");
        assertThat(r.out()).contains("diff", "8  differ: amn diff found tensors, shapes, dtypes or values that differ");
    }
}
