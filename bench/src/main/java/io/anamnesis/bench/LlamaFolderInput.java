package io.anamnesis.bench;

import io.anamnesis.api.numeric.Floats;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Writes issue 17's whole-process workload: a Hugging Face llama folder of 1.00 GiB of BF16
 * weights (hidden 2048, intermediate 5632, 9 layers, 16 heads, 4 KV heads, vocabulary 32000,
 * untied {@code lm_head}), its {@code config.json} and {@code tokenizer_config.json}, and a
 * copy of the SentencePiece {@code tokenizer.model} given (the hf-to-gguf corpus' 320-piece
 * one serves: the converter pads the vocabulary to {@code vocab_size} as llama.cpp's does).
 * Weights are Gaussian with standard deviation 0.02, rounded to BF16; timing does not depend
 * on the values beyond their being weight-like.
 *
 * <pre>java -cp bench/target/benchmarks.jar io.anamnesis.bench.LlamaFolderInput OUT_DIR TOKENIZER_MODEL [LAYERS]</pre>
 */
public final class LlamaFolderInput {
    private LlamaFolderInput() {
    }

    static final int HIDDEN = 2048;
    static final int INTERMEDIATE = 5632;
    static final int HEADS = 16;
    static final int KV_HEADS = 4;
    static final int VOCAB = 32000;

    record Tensor(String name, long[] shape) {
        long elements() {
            long n = 1;
            for (long d : shape) n *= d;
            return n;
        }
    }

    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args[0]);
        Path tokenizer = Path.of(args[1]);
        int layers = args.length > 2 ? Integer.parseInt(args[2]) : 9;
        Files.createDirectories(dir);
        int kvDim = HIDDEN / HEADS * KV_HEADS;
        List<Tensor> tensors = new ArrayList<>();
        tensors.add(new Tensor("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN}));
        for (int l = 0; l < layers; l++) {
            String p = "model.layers." + l + ".";
            tensors.add(new Tensor(p + "input_layernorm.weight", new long[]{HIDDEN}));
            tensors.add(new Tensor(p + "self_attn.q_proj.weight", new long[]{HIDDEN, HIDDEN}));
            tensors.add(new Tensor(p + "self_attn.k_proj.weight", new long[]{kvDim, HIDDEN}));
            tensors.add(new Tensor(p + "self_attn.v_proj.weight", new long[]{kvDim, HIDDEN}));
            tensors.add(new Tensor(p + "self_attn.o_proj.weight", new long[]{HIDDEN, HIDDEN}));
            tensors.add(new Tensor(p + "post_attention_layernorm.weight", new long[]{HIDDEN}));
            tensors.add(new Tensor(p + "mlp.gate_proj.weight", new long[]{INTERMEDIATE, HIDDEN}));
            tensors.add(new Tensor(p + "mlp.up_proj.weight", new long[]{INTERMEDIATE, HIDDEN}));
            tensors.add(new Tensor(p + "mlp.down_proj.weight", new long[]{HIDDEN, INTERMEDIATE}));
        }
        tensors.add(new Tensor("model.norm.weight", new long[]{HIDDEN}));
        tensors.add(new Tensor("lm_head.weight", new long[]{VOCAB, HIDDEN}));

        StringBuilder header = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
        long offset = 0;
        for (Tensor t : tensors) {
            long bytes = 2 * t.elements();
            header.append(",\"").append(t.name()).append("\":{\"dtype\":\"BF16\",\"shape\":[");
            for (int i = 0; i < t.shape().length; i++) header.append(i == 0 ? "" : ",").append(t.shape()[i]);
            header.append("],\"data_offsets\":[").append(offset).append(',').append(offset + bytes).append("]}");
            offset += bytes;
        }
        header.append('}');
        while ((header.length() + 8) % 8 != 0) header.append(' ');
        byte[] json = header.toString().getBytes(StandardCharsets.UTF_8);
        SplittableRandom random = new SplittableRandom(20261126);
        ByteBuffer chunk = ByteBuffer.allocate(1 << 20).order(ByteOrder.LITTLE_ENDIAN);
        try (OutputStream out = Files.newOutputStream(dir.resolve("model.safetensors"))) {
            out.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(json.length).array());
            out.write(json);
            for (Tensor t : tensors) {
                boolean norm = t.shape().length == 1;
                for (long left = t.elements(); left > 0; ) {
                    chunk.clear();
                    int n = (int) Math.min(chunk.capacity() / 2, left);
                    for (int i = 0; i < n; i++) {
                        float v = norm ? 1f + (float) random.nextGaussian() * 0.05f : (float) random.nextGaussian() * 0.02f;
                        chunk.putShort(Floats.f32ToBf16(v));
                    }
                    out.write(chunk.array(), 0, 2 * n);
                    left -= n;
                }
            }
        }
        Files.copy(tokenizer, dir.resolve("tokenizer.model"));
        Files.writeString(dir.resolve("config.json"), """
                {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16",
                 "hidden_size": %d, "intermediate_size": %d, "num_hidden_layers": %d,
                 "num_attention_heads": %d, "num_key_value_heads": %d, "head_dim": %d,
                 "max_position_embeddings": 4096, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
                 "rope_scaling": null, "tie_word_embeddings": false, "vocab_size": %d,
                 "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu"}
                """.formatted(HIDDEN, INTERMEDIATE, layers, HEADS, KV_HEADS, HIDDEN / HEADS, VOCAB));
        Files.writeString(dir.resolve("tokenizer_config.json"), """
                {"add_bos_token": true, "add_eos_token": false, "bos_token": "<s>", "eos_token": "</s>",
                 "unk_token": "<unk>", "model_max_length": 4096, "tokenizer_class": "LlamaTokenizer"}
                """);
    }
}
