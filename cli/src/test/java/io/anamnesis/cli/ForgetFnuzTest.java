package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.numeric.Floats;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static io.anamnesis.cli.Runs.amn;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code amn forget --to fp8_e4m3fnuz | fp8_e5m2fnuz | fp8_e4m3fnuz_vllm} and {@code --like} an
 * FNUZ file, through the installed modules, on a weight built here whose codes are worked out
 * by hand from the E4M3FNUZ layout (bias 8: 0x7F = 240, 0x7E = 224, 0x40 = 1, 0x01 = 2^-10).
 */
class ForgetFnuzTest {
    @TempDir
    Path dir;

    private static final Anamnesis AMN = Anamnesis.installed();
    static final String W = "model.layers.0.mlp.down_proj.weight";

    /** A safetensors file with one BF16 weight [2, 8] and a norm, as the spec lays it out. */
    private Path model(String name, float[] weight) throws IOException {
        String header = "{\"" + W + "\":{\"dtype\":\"BF16\",\"shape\":[2,8],\"data_offsets\":[0,32]},"
                + "\"model.norm.weight\":{\"dtype\":\"BF16\",\"shape\":[8],\"data_offsets\":[32,48]}}";
        byte[] json = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + json.length + 48).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(json.length).put(json);
        for (float v : weight) b.putShort(Floats.f32ToBf16(v));
        for (int i = 0; i < 8; i++) b.putShort(Floats.f32ToBf16(1f));
        return Files.write(dir.resolve(name), b.array());
    }

    /** Amax 240, so the native scale is 1 and each code is the value's own. */
    static final float[] VALUES = {
            240f, -240f, 232f, 1.0625f, 0x1p-10f, 0x1p-11f, -0x1p-11f, -0x1p-12f,
            1f, -1f, 0.5f, -0.5f, 224f, -224f, 0f, -0f};
    /** 232 and 1.0625 are ties (to the even 0x7E, 0x40); half the smallest subnormal and every zero are 0x00, never 0x80. */
    static final int[] NATIVE = {
            0x7F, 0xFF, 0x7E, 0x40, 0x01, 0x00, 0x00, 0x00,
            0x40, 0xC0, 0x38, 0xB8, 0x7E, 0xFE, 0x00, 0x00};

    private List<String> files() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private static float f32(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getFloat();
    }

    @Test
    void nativeFnuzCodesAreTheFormatsOwnAndTheConfigNamesIt() throws IOException {
        Path in = model("model.safetensors", VALUES);
        Path out = dir.resolve("native.safetensors");
        Runs.Run r = amn(AMN, "forget", in.toString(), "--to", "fp8_e4m3fnuz", "--granularity", "tensor", "-o", out.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("1 quantized to fp8_e4m3fnuz, 1 kept");
        Map<String, String> meta = new LinkedHashMap<>();
        Map<String, Runs.Stored> t = Runs.readSafetensors(out, meta);
        assertThat(t.get(W).dtype()).isEqualTo("F8_E4M3FNUZ");
        byte[] want = new byte[NATIVE.length];
        for (int i = 0; i < want.length; i++) want[i] = (byte) NATIVE[i];
        assertThat(t.get(W).bytes()).containsExactly(want);
        Runs.Stored scale = t.get("model.layers.0.mlp.down_proj.weight_scale");
        assertThat(scale.dtype()).isEqualTo("F32");
        assertThat(scale.shape()).isEmpty();
        assertThat(f32(scale.bytes())).isEqualTo(1f);
        assertThat(meta).containsEntry("quantization_config",
                "{\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3fnuz\", \"quant_method\": \"fp8\"}");

        // E5M2FNUZ with 128-wide blocks would not tile [2, 8]; one scale per row does
        Path e5 = dir.resolve("e5.safetensors");
        Runs.Run r5 = amn(AMN, "forget", in.toString(), "--to", "fp8_e5m2fnuz", "--granularity", "channel", "-o", e5.toString());
        assertThat(r5.code()).as(r5.err()).isZero();
        Map<String, String> meta5 = new LinkedHashMap<>();
        Map<String, Runs.Stored> t5 = Runs.readSafetensors(e5, meta5);
        assertThat(t5.get(W).dtype()).isEqualTo("F8_E5M2FNUZ");
        assertThat(t5.get("model.layers.0.mlp.down_proj.weight_scale").shape()).containsExactly(2, 1);
        assertThat(meta5.get("quantization_config")).contains("\"fmt\": \"e5m2fnuz\"");
    }

    @Test
    void vllmsConventionStopsAt224AndDoublesTheE4m3Scale() throws IOException {
        Path in = model("model.safetensors", VALUES);
        Path out = dir.resolve("vllm.safetensors");
        Runs.Run r = amn(AMN, "forget", in.toString(), "--to", "fp8_e4m3fnuz_vllm", "--granularity", "tensor", "-o", out.toString());
        assertThat(r.code()).as(r.err()).isZero();
        Map<String, Runs.Stored> t = Runs.readSafetensors(out, new LinkedHashMap<>());
        assertThat(t.get(W).dtype()).isEqualTo("F8_E4M3FNUZ");
        byte[] codes = t.get(W).bytes();
        // 240 is E4M3's 448 (0x7E) under amax / 448, read as FNUZ's 224; zeros of either sign are 0x00
        assertThat(codes[0] & 0xFF).isEqualTo(0x7E);
        assertThat(codes[1] & 0xFF).isEqualTo(0xFE);
        assertThat(codes[6] & 0xFF).as("E4M3's -0, fixed").isEqualTo(0x00);
        assertThat(codes[15] & 0xFF).isEqualTo(0x00);
        for (byte c : codes) assertThat(c & 0x7F).isLessThanOrEqualTo(0x7E);
        assertThat(f32(t.get("model.layers.0.mlp.down_proj.weight_scale").bytes())).isEqualTo(2 * (240f / 448f));
    }

    @Test
    void likeAnFnuzFileTakesTheConventionItsCodesShow() throws IOException {
        Path in = model("model.safetensors", VALUES);
        float[] other = new float[16];
        for (int i = 0; i < other.length; i++) other[i] = (i - 7) * 0.37f;
        Path tuned = model("tuned.safetensors", other);
        for (String to : List.of("fp8_e4m3fnuz", "fp8_e4m3fnuz_vllm")) {
            Path ref = dir.resolve(to + ".safetensors");
            assertThat(amn(AMN, "forget", "-q", in.toString(), "--to", to, "--granularity", "tensor", "-o", ref.toString()).code())
                    .isZero();
            Path out = dir.resolve("like-" + to + ".safetensors");
            Runs.Run r = amn(AMN, "forget", tuned.toString(), "--like", ref.toString(), "-o", out.toString());
            assertThat(r.code()).as(r.err()).isZero();
            assertThat(r.out()).contains("1 quantized to " + to + ",");
            Map<String, Runs.Stored> t = Runs.readSafetensors(out, new LinkedHashMap<>());
            assertThat(t.get(W).dtype()).isEqualTo("F8_E4M3FNUZ");
            int largest = 0;
            for (byte c : t.get(W).bytes()) largest = Math.max(largest, c & 0x7F);
            assertThat(largest).as(to).isEqualTo(to.endsWith("_vllm") ? 0x7E : 0x7F);
        }
    }

    @Test
    void badRequestsAreTypedAndWriteNothing() throws IOException {
        Path in = model("model.safetensors", VALUES);
        Path out = dir.resolve("out.safetensors");
        Runs.Run unknown = amn(AMN, "forget", in.toString(), "--to", "fp8_e4m3fnuzz", "-o", out.toString());
        assertThat(unknown.code()).isEqualTo(2);
        assertThat(unknown.err()).contains("unknown target 'fp8_e4m3fnuzz'; targets: ")
                .contains("fp8_e4m3fnuz, ", "fp8_e5m2fnuz, ", "fp8_e4m3fnuz_vllm");
        // a setting FP8 cannot take: a usage error (2); blocks that do not tile the weight: unsupported (6)
        Runs.Run badBlock = amn(AMN, "forget", in.toString(), "--to", "fp8_e5m2fnuz", "--block-size", "100", "-o", out.toString());
        assertThat(badBlock.code()).as(badBlock.err()).isEqualTo(2);
        Runs.Run untiled = amn(AMN, "forget", in.toString(), "--to", "fp8_e4m3fnuz", "-o", out.toString());
        assertThat(untiled.code()).as(untiled.err()).isEqualTo(6);
        assertThat(untiled.err()).contains("do not tile").doesNotContain("\tat ");
        assertThat(files()).containsExactly("model.safetensors");
    }
}
