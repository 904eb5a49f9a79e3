package io.anamnesis.quant.gguf.llama;

import java.util.List;
import java.util.function.Predicate;

/**
 * The broad tensor categories llama.cpp's type choice keys on ({@code tensor_category} and
 * {@code tensor_get_category} in src/llama-quant.cpp): a tensor's category is the first row
 * of {@link #RULES} its GGUF name matches, whole-name or substring as llama.cpp matches it.
 */
public enum Category {
    TOKEN_EMBD, ATTENTION_Q, ATTENTION_V, ATTENTION_K, ATTENTION_QKV, ATTENTION_KV_B, ATTENTION_OUTPUT,
    FFN_UP, FFN_GATE, FFN_DOWN, OUTPUT, OTHER;

    private record Rule(Category category, Predicate<String> matches) {
    }

    private static Rule named(Category c, String... names) {
        return new Rule(c, n -> List.of(names).contains(n));
    }

    private static Rule containing(Category c, String part) {
        return new Rule(c, n -> n.contains(part));
    }

    /** In llama.cpp's order: the first match wins ("ffn_gate_inp" is FFN_GATE, "attn_qkv.weight" not V). */
    private static final List<Rule> RULES = List.of(
            named(OUTPUT, "output.weight"),
            named(TOKEN_EMBD, "token_embd.weight", "per_layer_token_embd.weight"),
            containing(ATTENTION_QKV, "attn_qkv.weight"),
            containing(ATTENTION_KV_B, "attn_kv_b.weight"),
            containing(ATTENTION_V, "attn_v.weight"),
            containing(ATTENTION_K, "attn_k.weight"),
            containing(ATTENTION_Q, "attn_q.weight"),
            containing(ATTENTION_OUTPUT, "attn_output.weight"),
            containing(FFN_UP, "ffn_up"),
            containing(FFN_GATE, "ffn_gate"),
            containing(FFN_DOWN, "ffn_down"));

    /** The category of a tensor name. */
    public static Category of(String tensorName) {
        for (Rule r : RULES) {
            if (r.matches().test(tensorName)) return r.category();
        }
        return OTHER;
    }

    /** {@code category_is_attn_v}: the value-like projections, more sensitive to quantization. */
    public boolean isAttentionV() {
        return this == ATTENTION_V || this == ATTENTION_QKV || this == ATTENTION_KV_B;
    }
}
