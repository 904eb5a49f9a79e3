package io.anamnesis.bench;

import io.anamnesis.api.numeric.Floats;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;

/**
 * Writes the whole-process workload of {@code docs/benchmarks.md} for compressed-tensors: a
 * W4A16 checkpoint (pack-quantized int4, symmetric, group 128, BF16 scales) of 12 layers of
 * [4096, 11008] plus one BF16 norm each, 1.008 GiB of BF16 once recovered, with its
 * {@code config.json}. Codes are random nibbles and scales weight-like (timing does not
 * depend on the values; bit-exactness is the corpus' business).
 *
 * <pre>java -cp bench/target/benchmarks.jar io.anamnesis.bench.CompressedTensorsInput OUT_DIR [LAYERS]</pre>
 */
public final class CompressedTensorsInput {
    private CompressedTensorsInput() {
    }

    static final int ROWS = 4096;
    static final int COLS = 11008;
    static final int GROUP = 128;

    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args[0]);
        int layers = args.length > 1 ? Integer.parseInt(args[1]) : 12;
        Files.createDirectories(dir);
        long packedBytes = (long) ROWS * (COLS / 8) * 4;
        long scaleBytes = (long) ROWS * (COLS / GROUP) * 2;
        StringBuilder header = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
        long offset = 0;
        for (int l = 0; l < layers; l++) {
            String p = "model.layers." + l + ".mlp.down_proj";
            offset = entry(header, p + ".weight_packed", "I32", "[" + ROWS + "," + COLS / 8 + "]", offset, packedBytes);
            offset = entry(header, p + ".weight_scale", "BF16", "[" + ROWS + "," + COLS / GROUP + "]", offset, scaleBytes);
            offset = entry(header, p + ".weight_shape", "I64", "[2]", offset, 16);
            offset = entry(header, "model.layers." + l + ".post_attention_layernorm.weight", "BF16", "[" + ROWS + "]", offset, 2L * ROWS);
        }
        header.append('}');
        while ((header.length() + 8) % 8 != 0) header.append(' ');
        byte[] json = header.toString().getBytes(StandardCharsets.UTF_8);
        SplittableRandom random = new SplittableRandom(20260);
        try (OutputStream out = Files.newOutputStream(dir.resolve("model.safetensors"))) {
            out.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(json.length).array());
            out.write(json);
            byte[] chunk = new byte[1 << 20];
            for (int l = 0; l < layers; l++) {
                for (long left = packedBytes; left > 0; left -= chunk.length) {
                    random.nextBytes(chunk);
                    out.write(chunk, 0, (int) Math.min(chunk.length, left));
                }
                ByteBuffer s = ByteBuffer.allocate((int) scaleBytes).order(ByteOrder.LITTLE_ENDIAN);
                for (int i = 0; i < scaleBytes / 2; i++) s.putShort(Floats.f32ToBf16((float) (random.nextDouble(0.5, 1.5) * 0.02 / 7)));
                out.write(s.array());
                out.write(ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(ROWS).putLong(COLS).array());
                ByteBuffer n = ByteBuffer.allocate(2 * ROWS).order(ByteOrder.LITTLE_ENDIAN);
                for (int i = 0; i < ROWS; i++) n.putShort((short) 0x3F80);
                out.write(n.array());
            }
        }
        Files.writeString(dir.resolve("config.json"), """
                {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16",
                 "quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized",
                  "quantization_status": "compressed", "ignore": ["lm_head"], "sparsity_config": {}, "transform_config": {},
                  "config_groups": {"group_0": {"targets": ["Linear"], "format": "pack-quantized",
                   "weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 128,
                    "actorder": null, "block_structure": null, "dynamic": false}}}}}
                """);
    }

    private static long entry(StringBuilder h, String name, String dtype, String shape, long offset, long bytes) {
        h.append(",\"").append(name).append("\":{\"dtype\":\"").append(dtype).append("\",\"shape\":").append(shape)
                .append(",\"data_offsets\":[").append(offset).append(',').append(offset + bytes).append("]}");
        return offset + bytes;
    }
}
