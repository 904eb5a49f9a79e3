import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes samples/tiny-fp8.safetensors: a tiny, deterministic FP8 checkpoint laid out the way
 * DeepSeek-V3 / Qwen3-FP8 checkpoints are, written by the safetensors spec alone (8-byte
 * little-endian header length, JSON header padded with spaces to 8 bytes, then the data).
 *
 * <pre>java samples/MakeTinyFp8.java samples/tiny-fp8.safetensors</pre>
 *
 * Two layers, each with an MLP down_proj in F8_E4M3 [256, 384] and its 128 x 128 block
 * scales (weight_scale_inv, BF16 [2, 3]), an attention o_proj in F8_E4M3 [64, 384] with one
 * per-tensor F32 scale (weight_scale, shape []), and a BF16 input_layernorm; plus a final F32
 * norm. Values come from a fixed xorshift generator, so every run writes the same bytes.
 */
public final class MakeTinyFp8 {
    private static final int HIDDEN = 384;
    private static final int INTERMEDIATE = 256;
    private static final int HEADS_DIM = 64;

    private record Tensor(String name, String dtype, long[] shape, byte[] data) {
    }

    private static long state = 0x9E3779B97F4A7C15L;

    private static long next() {
        state ^= state << 13;
        state ^= state >>> 7;
        state ^= state << 17;
        return state;
    }

    /** E4M3 (fn) codes, any sign and magnitude, never the NaN codes 0x7F / 0xFF. */
    private static byte[] fp8(int count) {
        byte[] b = new byte[count];
        for (int i = 0; i < count; i++) {
            int code = (int) (next() >>> 56) & 0xFF;
            if ((code & 0x7F) == 0x7F) code--;
            b[i] = (byte) code;
        }
        return b;
    }

    /** Round-to-nearest-even narrowing of an F32 (no NaN here). */
    private static short bf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }

    private static byte[] bf16s(float... values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) b.putShort(bf16(v));
        return b.array();
    }

    private static byte[] f32s(float... values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) b.putFloat(v);
        return b.array();
    }

    /** Norm weights near 1: 1 + (k - 8) / 64 for k in 0..15. */
    private static float[] norm(int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) v[i] = 1f + ((next() >>> 60) - 8) / 64f;
        return v;
    }

    public static void main(String[] args) throws IOException {
        Path out = Path.of(args.length > 0 ? args[0] : "samples/tiny-fp8.safetensors");
        List<Tensor> tensors = new ArrayList<>();
        for (int layer = 0; layer < 2; layer++) {
            String p = "model.layers." + layer + ".";
            tensors.add(new Tensor(p + "input_layernorm.weight", "BF16", new long[]{HIDDEN}, bf16s(norm(HIDDEN))));
            tensors.add(new Tensor(p + "mlp.down_proj.weight", "F8_E4M3", new long[]{INTERMEDIATE, HIDDEN},
                    fp8(INTERMEDIATE * HIDDEN)));
            // ceil(256 / 128) x ceil(384 / 128) blocks, scales of a few thousandths
            float[] blockScales = new float[2 * 3];
            for (int i = 0; i < blockScales.length; i++) blockScales[i] = (1 + i + 6 * layer) / 1024f;
            tensors.add(new Tensor(p + "mlp.down_proj.weight_scale_inv", "BF16", new long[]{2, 3}, bf16s(blockScales)));
            tensors.add(new Tensor(p + "self_attn.o_proj.weight", "F8_E4M3", new long[]{HEADS_DIM, HIDDEN},
                    fp8(HEADS_DIM * HIDDEN)));
            tensors.add(new Tensor(p + "self_attn.o_proj.weight_scale", "F32", new long[]{}, f32s(0.0025f * (layer + 1))));
        }
        tensors.add(new Tensor("model.norm.weight", "F32", new long[]{HIDDEN}, f32s(norm(HIDDEN))));

        String quantizationConfig = "{\"quant_method\":\"fp8\",\"fmt\":\"e4m3\",\"activation_scheme\":\"dynamic\","
                + "\"weight_block_size\":[128,128]}";
        StringBuilder json = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\",\"quantization_config\":\"")
                .append(quantizationConfig.replace("\"", "\\\"")).append("\"}");
        ByteArrayOutputStream data = new ByteArrayOutputStream();
        for (Tensor t : tensors) {
            long begin = data.size();
            data.write(t.data());
            json.append(",\"").append(t.name()).append("\":{\"dtype\":\"").append(t.dtype()).append("\",\"shape\":[");
            for (int i = 0; i < t.shape().length; i++) json.append(i == 0 ? "" : ",").append(t.shape()[i]);
            json.append("],\"data_offsets\":[").append(begin).append(",").append(data.size()).append("]}");
        }
        json.append("}");
        while ((json.length() % 8) != 0) json.append(' ');
        byte[] header = json.toString().getBytes(StandardCharsets.UTF_8);

        ByteBuffer length = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(header.length);
        ByteArrayOutputStream file = new ByteArrayOutputStream();
        file.write(length.array());
        file.write(header);
        file.write(data.toByteArray());
        Files.write(out, file.toByteArray());
        System.out.println("wrote " + out + " (" + file.size() + " bytes, " + tensors.size() + " tensors)");
    }
}
