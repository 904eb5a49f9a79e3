package io.anamnesis.cli;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * A small Hugging Face llama folder for the AOT training of {@code convert} ({@link AotTrainCommand}):
 * {@code config.json} and one BF16 {@code model.safetensors} of one layer (hidden 64, intermediate
 * 128, 4 heads, 2 KV heads, vocabulary 64), values drawn at random, and a SentencePiece
 * {@code tokenizer.model} of 64 pieces (unknown, two controls, single characters), so that one
 * training run reads a vocabulary as a convert of a real llama folder does (without it the
 * vocabulary's classes and lambdas were loaded and spun at run time, and a convert with a
 * vocabulary took 50 ms longer than one without). Not a model anyone runs; only its shapes,
 * names and file formats matter.
 */
final class TrainingFolder {
    private TrainingFolder() {
    }

    private static final int HIDDEN = 64;
    private static final int INTERMEDIATE = 128;
    private static final int KV = HIDDEN / 2;
    private static final int VOCAB = 64;

    static Path write(Path dir) throws IOException {
        Files.createDirectories(dir);
        Map<String, int[]> shapes = new LinkedHashMap<>();
        shapes.put("model.embed_tokens.weight", new int[]{VOCAB, HIDDEN});
        shapes.put("model.layers.0.input_layernorm.weight", new int[]{HIDDEN});
        shapes.put("model.layers.0.self_attn.q_proj.weight", new int[]{HIDDEN, HIDDEN});
        shapes.put("model.layers.0.self_attn.k_proj.weight", new int[]{KV, HIDDEN});
        shapes.put("model.layers.0.self_attn.v_proj.weight", new int[]{KV, HIDDEN});
        shapes.put("model.layers.0.self_attn.o_proj.weight", new int[]{HIDDEN, HIDDEN});
        shapes.put("model.layers.0.post_attention_layernorm.weight", new int[]{HIDDEN});
        shapes.put("model.layers.0.mlp.gate_proj.weight", new int[]{INTERMEDIATE, HIDDEN});
        shapes.put("model.layers.0.mlp.up_proj.weight", new int[]{INTERMEDIATE, HIDDEN});
        shapes.put("model.layers.0.mlp.down_proj.weight", new int[]{HIDDEN, INTERMEDIATE});
        shapes.put("model.norm.weight", new int[]{HIDDEN});
        shapes.put("lm_head.weight", new int[]{VOCAB, HIDDEN});

        StringBuilder header = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
        long offset = 0;
        for (Map.Entry<String, int[]> t : shapes.entrySet()) {
            int[] d = t.getValue();
            long bytes = 2L * d[0] * (d.length > 1 ? d[1] : 1);
            header.append(",\"").append(t.getKey()).append("\":{\"dtype\":\"BF16\",\"shape\":[").append(d[0])
                    .append(d.length > 1 ? "," + d[1] : "").append("],\"data_offsets\":[").append(offset).append(',')
                    .append(offset + bytes).append("]}");
            offset += bytes;
        }
        header.append('}');
        while (header.length() % 8 != 0) header.append(' ');
        byte[] json = header.toString().getBytes(StandardCharsets.UTF_8);
        ByteBuffer file = ByteBuffer.allocate(Math.toIntExact(8 + json.length + offset)).order(ByteOrder.LITTLE_ENDIAN);
        file.putLong(json.length).put(json);
        SplittableRandom random = new SplittableRandom(17);
        while (file.hasRemaining()) {
            // a BF16 of magnitude 2^-8 .. 2^-5 and either sign: weight-like, no infinities or NaNs
            file.putShort((short) ((random.nextBoolean() ? 0x8000 : 0) | (0x3B80 + random.nextInt(0x180))));
        }
        Files.write(dir.resolve("model.safetensors"), file.array());
        Files.write(dir.resolve("tokenizer.model"), sentencePieceModel());
        Files.writeString(dir.resolve("config.json"), """
                {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16",
                 "hidden_size": %d, "intermediate_size": %d, "num_hidden_layers": 1,
                 "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128,
                 "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": false,
                 "vocab_size": %d, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu"}
                """.formatted(HIDDEN, INTERMEDIATE, VOCAB));
        return dir;
    }

    /**
     * sentencepiece's {@code ModelProto}: field 1, one {@code SentencePiece} per piece (1: the
     * piece, 2: its score as a float, 3: its type: 1 normal, 2 unknown, 3 control), and field 2,
     * the {@code TrainerSpec} with {@code model_type} (3) BPE (2), as llama's tokenizers have.
     * Pieces: unknown, two controls, each letter with and without the word-start mark, digits.
     * Every length here is below 128, so each is its one-byte varint.
     */
    private static byte[] sentencePieceModel() {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        List<String> pieces = new ArrayList<>(List.of("<unk>", "<s>", "</s>"));
        for (char c = 'a'; c <= 'z'; c++) pieces.addAll(List.of("\u2581" + c, String.valueOf(c)));
        for (char c = '0'; pieces.size() < VOCAB; c++) pieces.add(String.valueOf(c));
        for (int i = 0; i < VOCAB; i++) {
            String piece = pieces.get(i);
            int type = i == 0 ? 2 : i < 3 ? 3 : 1;
            byte[] text = piece.getBytes(StandardCharsets.UTF_8);
            java.io.ByteArrayOutputStream p = new java.io.ByteArrayOutputStream();
            p.write(0x0A);
            p.write(text.length);
            p.writeBytes(text);
            p.write(0x15);
            int score = Float.floatToIntBits(i < 3 ? 0f : -i);
            for (int b = 0; b < 4; b++) p.write(score >>> (8 * b));
            p.write(0x18);
            p.write(type);
            out.write(0x0A);
            out.write(p.size());
            out.writeBytes(p.toByteArray());
        }
        out.writeBytes(new byte[]{0x12, 0x02, 0x18, 0x02});
        return out.toByteArray();
    }
}
