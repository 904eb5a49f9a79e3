package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.anamnesis.api.numeric.Floats;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import static io.anamnesis.corpus.CorpusCliTest.amn;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Lethe's round trip on the quantized safetensors cases of the corpus, through the command
 * line in-process: {@code amn remember input --to bf16}, then
 * {@code amn forget recovered --like input} must give back every stored tensor of the input:
 * the same names, dtypes and shapes, and the same bytes wherever the slice holds what the
 * original encoder computed its scales from (the quant_state blob compared parsed).
 *
 * <p>Which parts can come back is worked out from the input alone, by the published
 * formulas, not from our output: a scale group (a 4-bit block, an int8 row, an FP8 tensor,
 * row or block) comes back exactly when the slice holds the value that set its scale (a
 * code of the format's largest magnitude) and, for FP8, when that scale survives the BF16
 * recovery ({@code round(bf16(max * s) / max) == s}; for vLLM's E4M3FNUZ, whose largest code
 * is 224, {@code 2 round(bf16(224 s) / 448) == s}). The corpus slices are 256 columns or
 * 4096 elements of real tensors, so per-tensor and per-row scales and the double-quant mean
 * were often set by values outside them; those parts differ, and the decoded values must
 * still agree closely ({@code amn diff}). Every count is printed for docs/forget.md.
 */
class ForgetRoundTripTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TestFactory
    Stream<DynamicTest> roundTrips() {
        Optional<Path> root = CorpusCase.root();
        if (root.isEmpty()) {
            return Stream.of(DynamicTest.dynamicTest("shared corpus", () -> Assumptions.abort("shared corpus not found")));
        }
        return CorpusCase.all(root.get()).stream()
                .filter(c -> c.family().equals("bnb") || c.family().equals("fp8"))
                .map(c -> DynamicTest.dynamicTest(c.id(), () -> roundTrip(c)));
    }

    /** Bytes of one tensor the round trip must give back, from the input alone. */
    private record Expectation(boolean[] exactBytes, String why) {
    }

    static void roundTrip(CorpusCase c) throws Exception {
        Optional<String> missing = Requirements.missing(c, CorpusApiTest.AMN);
        Assumptions.assumeTrue(missing.isEmpty(), () -> c.id() + ": " + missing.orElse(""));
        Path tmp = Files.createTempDirectory("amn-forget-");
        try {
            Path recovered = tmp.resolve("recovered.safetensors");
            Path out = tmp.resolve("out.safetensors");
            CorpusCliTest.Run r1 = amn("remember", "--quiet", "--to", "bf16", "-o", recovered.toString(), c.input().toString());
            assertThat(r1.code()).as(c.id() + " remember: " + r1.err()).isZero();
            CorpusCliTest.Run r2 = amn("forget", recovered.toString(), "--like", c.input().toString(), "-o", out.toString());
            assertThat(r2.code()).as(c.id() + " forget --like: " + r2.err()).isZero();
            assertThat(r2.out()).contains(" quantized to ");

            Map<String, ReferenceSafetensors.Tensor> in = ReferenceSafetensors.read(c.input());
            Map<String, ReferenceSafetensors.Tensor> got = ReferenceSafetensors.read(out);
            assertThat(got.keySet()).as(c.id() + " tensors").containsExactlyInAnyOrderElementsOf(in.keySet());
            Map<String, Expectation> expected = expectations(c, in);
            StringBuilder report = new StringBuilder("ROUNDTRIP " + c.id() + ":");
            for (var e : in.entrySet()) {
                String name = e.getKey();
                ReferenceSafetensors.Tensor want = e.getValue();
                ReferenceSafetensors.Tensor have = got.get(name);
                assertThat(have.dtype()).as(c.id() + " " + name + " dtype").isEqualTo(want.dtype());
                if (name.contains(".quant_state.bitsandbytes__")) {
                    // a blob's shape is its text's length: compared parsed, its formatting may differ
                    ObjectNode a = (ObjectNode) JSON.readTree(new String(want.bytes(), StandardCharsets.UTF_8));
                    ObjectNode b = (ObjectNode) JSON.readTree(new String(have.bytes(), StandardCharsets.UTF_8));
                    report.append(" ").append(name).append(" parsed ").append(a.equals(b) ? "equal" : "equal but nested_offset ("
                            + a.get("nested_offset") + " vs " + b.get("nested_offset") + ")").append(";");
                    // the double-quant offset is the mean over the whole tensor, which the slice does not hold
                    a.remove("nested_offset");
                    b.remove("nested_offset");
                    assertThat(b).as(c.id() + " " + name + " parsed").isEqualTo(a);
                    continue;
                }
                assertThat(have.shape()).as(c.id() + " " + name + " shape").isEqualTo(want.shape());
                Expectation x = expected.get(name);
                int differ = 0;
                int predicted = 0;
                for (int i = 0; i < want.bytes().length; i++) {
                    boolean same = want.bytes()[i] == have.bytes()[i];
                    if (!same) differ++;
                    if (x.exactBytes()[i]) {
                        predicted++;
                        if (!same) {
                            throw new AssertionError(c.id() + " " + name + ": byte " + i + " must come back (" + x.why()
                                    + ") but is " + have.bytes()[i] + ", not " + want.bytes()[i]);
                        }
                    }
                }
                report.append(" ").append(name).append(" ").append(differ).append(" of ").append(want.bytes().length)
                        .append(" bytes differ (").append(predicted).append(" must be equal: ").append(x.why()).append(");");
            }
            System.out.println(report);

            // what differs still decodes close to the input (B against A)
            CorpusCliTest.Run diff = amn("diff", "--json", c.input().toString(), out.toString());
            assertThat(diff.code()).as(c.id() + " diff: " + diff.err()).isIn(0, 8);
            JsonNode d = JSON.readTree(diff.out());
            assertThat(d.get("only_in_a")).isEmpty();
            assertThat(d.get("only_in_b")).isEmpty();
            for (JsonNode t : d.get("tensors")) {
                if (t.get("status").asText().equals("differs")) {
                    double snr = t.get("loss").get("snr_db").asDouble();
                    System.out.println("ROUNDTRIP " + c.id() + ": " + t.get("name").asText() + " decodes to " + String.format("%.1f", snr)
                            + " dB SNR against the input");
                    assertThat(snr).as(c.id() + " " + t.get("name").asText() + " SNR against the input").isGreaterThan(25);
                }
            }
            if (differingBytes(in, got) == 0) assertThat(diff.code()).as(c.id() + " identical files diff to 0").isZero();
        } finally {
            CorpusCliTest.deleteTree(tmp);
        }
    }

    private static long differingBytes(Map<String, ReferenceSafetensors.Tensor> a, Map<String, ReferenceSafetensors.Tensor> b) {
        long n = 0;
        for (var e : a.entrySet()) {
            byte[] x = e.getValue().bytes();
            byte[] y = b.get(e.getKey()).bytes();
            if (e.getKey().contains(".quant_state.")) {
                if (!Arrays.equals(x, y)) n++;
                continue;
            }
            for (int i = 0; i < x.length; i++) if (x[i] != y[i]) n++;
        }
        return n;
    }

    /** Which bytes of each stored tensor must come back, by family. */
    static Map<String, Expectation> expectations(CorpusCase c, Map<String, ReferenceSafetensors.Tensor> in) {
        Map<String, Expectation> out = new LinkedHashMap<>();
        for (var e : in.entrySet()) out.put(e.getKey(), new Expectation(new boolean[e.getValue().bytes().length], "nothing"));
        if (c.family().equals("fp8")) {
            fp8(in, out);
            return out;
        }
        boolean int8 = in.keySet().stream().anyMatch(n -> n.endsWith(".SCB"));
        for (var e : in.entrySet()) {
            String n = e.getKey();
            boolean[] all = new boolean[e.getValue().bytes().length];
            Arrays.fill(all, true);
            if (int8) {
                if (n.endsWith(".SCB")) int8(in, n, out);
                else if (!out.get(n).why().contains("rows")) out.put(n, new Expectation(all, "a constant"));
            } else if (n.endsWith(".nested_absmax") || (n.endsWith(".absmax") && e.getValue().dtype().equals("U8"))) {
                out.put(n, new Expectation(new boolean[all.length], "double-quant statistics span blocks outside the slice"));
            } else {
                // codes, absmax and code books: every 64-block of the slice is whole and holds its absmax code
                out.put(n, new Expectation(all, "whole blocks"));
            }
        }
        return out;
    }

    /** LLM.int8(): a row comes back when it holds a code of magnitude 127 (the value that set its SCB). */
    private static void int8(Map<String, ReferenceSafetensors.Tensor> in, String scbName, Map<String, Expectation> out) {
        String weightName = scbName.substring(0, scbName.length() - 4) + ".weight";
        ReferenceSafetensors.Tensor w = in.get(weightName);
        int rows = (int) w.shape()[0];
        int cols = (int) w.shape()[1];
        boolean[] wMask = new boolean[rows * cols];
        boolean[] sMask = new boolean[4 * rows];
        int whole = 0;
        for (int r = 0; r < rows; r++) {
            int max = 0;
            for (int k = 0; k < cols; k++) max = Math.max(max, Math.abs(w.bytes()[r * cols + k]));
            if (max == 127) {
                whole++;
                Arrays.fill(wMask, r * cols, (r + 1) * cols, true);
                Arrays.fill(sMask, 4 * r, 4 * r + 4, true);
            }
        }
        String why = whole + " of " + rows + " rows hold their absmax";
        out.put(weightName, new Expectation(wMask, why));
        out.put(scbName, new Expectation(sMask, why));
    }

    /**
     * FP8: a scale group comes back when it holds a code of the largest magnitude and its scale
     * survives BF16. E4M3FNUZ comes two ways (docs/forget.md): natively (scale amax / 240, the
     * amax coded 0x7F) or as vLLM's ROCm path makes it from E4M3 (scale 2 x amax / 448, the
     * amax coded 0x7E, never 0x7F); a weight holding a 0x7F is the first kind.
     */
    private static void fp8(Map<String, ReferenceSafetensors.Tensor> in, Map<String, Expectation> out) {
        for (var e : in.entrySet()) {
            String n = e.getKey();
            if (!n.endsWith(".weight")) continue;
            ReferenceSafetensors.Tensor w = e.getValue();
            String prefix = n.substring(0, n.length() - ".weight".length());
            String scaleName = in.containsKey(prefix + ".weight_scale") ? prefix + ".weight_scale" : prefix + ".weight_scale_inv";
            ReferenceSafetensors.Tensor s = in.get(scaleName);
            Fp8 format = Fp8.of(w.dtype());
            boolean vllm = format == Fp8.E4M3FNUZ && !holdsMagnitude(w.bytes(), 0x7F);
            // the value that sets a group's scale, and the divisor the encoder then uses (before any doubling)
            float max = vllm ? 224f : format.max;
            float divisor = vllm ? 448f : format.max;
            float factor = vllm ? 2f : 1f;
            int rows = (int) w.shape()[0];
            int cols = (int) w.shape()[1];
            int scaleCount = s.bytes().length / (s.dtype().equals("F32") ? 4 : 2);
            int gh;
            int gw;
            if (scaleCount == 1) {
                gh = rows;
                gw = cols;
            } else if (s.shape().length == 2 && s.shape()[1] == 1 && s.shape()[0] == rows) {
                gh = 1;
                gw = cols;
            } else {
                gh = 128;
                gw = 128;
            }
            int sc = (cols + gw - 1) / gw;
            boolean[] wMask = new boolean[rows * cols];
            boolean[] sMask = new boolean[s.bytes().length];
            int whole = 0;
            int groups = 0;
            int width = s.dtype().equals("F32") ? 4 : 2;
            for (int g = 0; g < scaleCount; g++) {
                groups++;
                int r0 = g / sc * gh;
                int c0 = g % sc * gw;
                float biggest = 0;
                for (int r = r0; r < Math.min(rows, r0 + gh); r++) {
                    for (int k = c0; k < Math.min(cols, c0 + gw); k++) biggest = Math.max(biggest, Math.abs(format.value(w.bytes()[r * cols + k])));
                }
                float scale = scale(s, g);
                // recovery: bf16(max * s) (one float32 multiply, narrowed); the encoder: that / divisor, into the scale's dtype
                float recoveredMax = Floats.bf16ToF32(Floats.f32ToBf16(max * scale));
                float again = factor * round(recoveredMax / divisor, s.dtype());
                if (biggest == max && again == scale) {
                    whole++;
                    for (int r = r0; r < Math.min(rows, r0 + gh); r++) Arrays.fill(wMask, r * cols + c0, r * cols + Math.min(cols, c0 + gw), true);
                    Arrays.fill(sMask, g * width, (g + 1) * width, true);
                }
            }
            String why = whole + " of " + groups + " scale groups hold their amax and keep their scale through BF16"
                    + (format == Fp8.E4M3FNUZ ? (vllm ? " (vLLM's E4M3FNUZ: amax at 224)" : " (native E4M3FNUZ)") : "");
            out.put(n, new Expectation(wMask, why));
            out.put(scaleName, new Expectation(sMask, why));
        }
    }

    private static boolean holdsMagnitude(byte[] codes, int magnitude) {
        for (byte c : codes) if ((c & 0x7F) == magnitude) return true;
        return false;
    }

    private static float scale(ReferenceSafetensors.Tensor s, int i) {
        ByteBuffer b = ByteBuffer.wrap(s.bytes()).order(ByteOrder.LITTLE_ENDIAN);
        return switch (s.dtype()) {
            case "F32" -> b.getFloat(4 * i);
            case "BF16" -> Floats.bf16ToF32(b.getShort(2 * i));
            default -> Floats.f16ToF32(b.getShort(2 * i));
        };
    }

    private static float round(float v, String dtype) {
        return switch (dtype) {
            case "BF16" -> Floats.bf16ToF32(Floats.f32ToBf16(v));
            case "F16" -> Floats.f16ToF32(Floats.f32ToF16(v));
            default -> v;
        };
    }

    /** The FP8 formats of the corpus, from their definitions: exponent and mantissa bits, bias, largest finite value. */
    private enum Fp8 {
        E4M3(4, 3, 7, 448f), E5M2(5, 2, 15, 57344f), E4M3FNUZ(4, 3, 8, 240f), E5M2FNUZ(5, 2, 16, 57344f);

        final int exponentBits;
        final int mantissaBits;
        final int bias;
        final float max;

        Fp8(int exponentBits, int mantissaBits, int bias, float max) {
            this.exponentBits = exponentBits;
            this.mantissaBits = mantissaBits;
            this.bias = bias;
            this.max = max;
        }

        static Fp8 of(String dtype) {
            return valueOf(dtype.substring("F8_".length()));
        }

        /** The value of a code (finite codes only matter here). */
        float value(byte code) {
            int c = code & 0xFF;
            int m = c & ((1 << mantissaBits) - 1);
            int e = (c >> mantissaBits) & ((1 << exponentBits) - 1);
            float v = e == 0 ? Math.scalb((float) m, 1 - bias - mantissaBits)
                    : Math.scalb((float) ((1 << mantissaBits) | m), e - bias - mantissaBits);
            return (c & 0x80) != 0 ? -v : v;
        }
    }

    // ------------------------------------------------------------------ bad input

    /** The first case of a family and name, or the test is skipped without the corpus. */
    private static CorpusCase corpusCase(String id) {
        Optional<Path> root = CorpusCase.root();
        Assumptions.assumeTrue(root.isPresent(), "shared corpus not found");
        return CorpusCase.all(root.get()).stream().filter(c -> c.id().equals(id)).findFirst()
                .orElseThrow(() -> new AssertionError("no corpus case " + id));
    }

    private static List<String> files(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void badSettingsAndReferencesAreTypedErrorsThatWriteNothing() throws Exception {
        CorpusCase nf4 = corpusCase("bnb/llama_1b_nf4");
        CorpusCase fp8 = corpusCase("fp8/qwen3_1_7b_fine_grained");
        Path tmp = Files.createTempDirectory("amn-forget-bad-");
        try {
            Path bf16 = tmp.resolve("recovered.safetensors");
            assertThat(amn("remember", "--quiet", "--to", "bf16", "-o", bf16.toString(), fp8.input().toString()).code()).isZero();
            Path out = tmp.resolve("out.safetensors");
            // settings the scheme cannot take are bad requests (2); a weight the blocks do not
            // tile and a reference with nothing quantized are unsupported input (6)
            Map<String[], Integer> bad = new LinkedHashMap<>();
            bad.put(new String[]{"--to", "nf4", "--block-size", "48"}, 2);   // not a power of two
            bad.put(new String[]{"--to", "fp4", "--block-size", "63"}, 2);   // odd
            bad.put(new String[]{"--to", "nf4", "--block-size", "16"}, 2);   // below bitsandbytes' 32
            bad.put(new String[]{"--to", "fp8", "--block-size", "100"}, 2);  // not a power of two
            bad.put(new String[]{"--to", "fp8", "--block-size", "512"}, 6);  // 512x512 blocks do not tile a 256x256 weight
            bad.put(new String[]{"--like", bf16.toString()}, 6);               // a reference with nothing quantized
            for (Map.Entry<String[], Integer> e : bad.entrySet()) {
                String[] args = e.getKey();
                List<String> cmd = new ArrayList<>(List.of("forget", bf16.toString(), "-o", out.toString()));
                cmd.addAll(List.of(args));
                CorpusCliTest.Run r = amn(cmd.toArray(String[]::new));
                assertThat(r.code()).as(String.join(" ", args) + ": " + r.err()).isEqualTo(e.getValue());
                assertThat(r.err()).startsWith("amn: ").doesNotContain("\tat ");
                assertThat(files(tmp)).as("nothing written for " + String.join(" ", args)).containsExactly("recovered.safetensors");
            }
            assertThat(amn("forget", bf16.toString(), "-o", out.toString(), "--to", "fp8", "--block-size", "512").err())
                    .contains("do not tile");
            assertThat(amn("forget", bf16.toString(), "-o", out.toString(), "--like", bf16.toString()).err())
                    .contains("holds no quantized tensor");

            // diff: nothing in common is a usage error; a file and its recovery differ in dtype (8)
            CorpusCliTest.Run none = amn("diff", nf4.input().toString(), fp8.input().toString());
            assertThat(none.code()).as(none.err()).isEqualTo(2);
            assertThat(none.err()).contains("no tensor name in common");
            CorpusCliTest.Run dtype = amn("diff", fp8.input().toString(), bf16.toString());
            assertThat(dtype.code()).as(dtype.err()).isEqualTo(8);
            assertThat(dtype.out()).contains("F8_E4M3 (FP8 E4M3").contains("| BF16");
            CorpusCliTest.Run same = amn("diff", fp8.input().toString(), fp8.input().toString());
            assertThat(same.code()).as(same.out()).isZero();
        } finally {
            CorpusCliTest.deleteTree(tmp);
        }
    }

    @Test
    void forgettingAQuantizedFileLikeItselfRecoversInF32OnTheWay() throws Exception {
        // no BF16 file in between: recovered to F32 on the fly, so FP8 block scales survive too
        for (String id : List.of("bnb/llama_1b_nf4", "bnb/llama_1b_fp4", "fp8/exaone_fine_grained", "fp8/qwen3_1_7b_fine_grained",
                "fp8/gen-e4m3fnuz-per-tensor")) {
            CorpusCase c = corpusCase(id);
            Path tmp = Files.createTempDirectory("amn-forget-self-");
            try {
                Path out = tmp.resolve("out.safetensors");
                CorpusCliTest.Run r = amn("forget", "--quiet", c.input().toString(), "--like", c.input().toString(), "-o", out.toString());
                assertThat(r.code()).as(id + ": " + r.err()).isZero();
                CorpusCliTest.Run diff = amn("diff", c.input().toString(), out.toString());
                assertThat(diff.code()).as(id + ": " + diff.out()).isZero();
                Map<String, ReferenceSafetensors.Tensor> in = ReferenceSafetensors.read(c.input());
                Map<String, ReferenceSafetensors.Tensor> got = ReferenceSafetensors.read(out);
                assertThat(differingBytes(in, got)).as(id).isZero();
            } finally {
                CorpusCliTest.deleteTree(tmp);
            }
        }
    }
}
