package io.anamnesis.corpus;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import io.anamnesis.corpus.FuzzedModel.PoolDims;
import io.anamnesis.corpus.FuzzedModel.Slot;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The tensor groups and configs each dequantizer's fuzz target draws from: the names its
 * claim looks for, the dtypes worth trying, the config keys it reads. One target per scheme
 * ({@code Fp8RecoverFuzzTarget}, ...), because Jazzer fuzzes one target per JVM.
 */
final class RecoverFuzzTargets {
    private RecoverFuzzTargets() {
    }

    static final String P = "model.layers.0.mlp.down_proj";

    static void run(FuzzedDataProvider in, List<Slot> slots, Map<String, List<Object>> config,
                    Map<String, Map<String, List<Object>>> json) {
        byte[] file = FuzzedModel.build(in, slots, config, json);
        Fuzzing.detectAndOpen("model.safetensors", file);
    }

    static void fp8(FuzzedDataProvider in) {
        run(in, List.of(
                Slot.of(P + ".weight", "F8_E4M3", "F8_E5M2", "BF16", "U8"),
                Slot.of(P + ".weight_scale", "F32", "BF16", "F16", "F8_E4M3", "I32"),
                Slot.of(P + ".weight_scale_inv", "F32", "BF16"),
                Slot.of(P + ".input_scale", "F32")),
                map("quant_method", List.of("fp8", "compressed-tensors"),
                        "weight_block_size", List.of(List.of(128, 128), List.of(32, 32), List.of(1, 1), new PoolDims(2), new PoolDims(3)),
                        "activation_scheme", List.of("dynamic", "static"),
                        "fmt", List.of("e4m3", "e5m2", "float8_e4m3fnuz")),
                Map.of());
    }

    static void gptq(FuzzedDataProvider in) {
        run(in, List.of(
                Slot.of(P + ".qweight", "I32", "I64", "I16"),
                Slot.of(P + ".qzeros", "I32", "I64"),
                Slot.of(P + ".scales", "F16", "BF16", "F32", "I32"),
                Slot.of(P + ".g_idx", "I32", "I64", "F32"),
                Slot.of(P + ".bias", "F16")),
                map("quant_method", List.of("gptq", "awq"),
                        "bits", List.of(4, 2, 3, 8, 5),
                        "group_size", List.of(128, 32, -1, 0, 64),
                        "desc_act", List.of(true, false),
                        "sym", List.of(true, false),
                        "checkpoint_format", List.of("gptq", "gptq_v2"),
                        "is_marlin_format", List.of(false, true)),
                Map.of());
    }

    static void awq(FuzzedDataProvider in) {
        run(in, List.of(
                Slot.of(P + ".qweight", "I32", "I16"),
                Slot.of(P + ".qzeros", "I32"),
                Slot.of(P + ".scales", "F16", "BF16", "F32")),
                map("quant_method", List.of("awq", "gptq"),
                        "bits", List.of(4, 8),
                        "w_bit", List.of(4, 3),
                        "group_size", List.of(128, 32, 64, -1),
                        "q_group_size", List.of(128, 64),
                        "zero_point", List.of(true, false),
                        "version", List.of("gemm", "gemv", "GEMM")),
                Map.of());
    }

    static void bnb(FuzzedDataProvider in) {
        String w = P + ".weight";
        Map<String, List<Object>> state = map(
                "quant_type", List.of("nf4", "fp4", "int8"),
                "blocksize", List.of(64, 128, 32, 4096),
                "dtype", List.of("bfloat16", "float16", "float32", "int8"),
                "shape", List.of(new PoolDims(2), new PoolDims(1), new PoolDims(3)),
                "nested_blocksize", List.of(256, 64),
                "nested_offset", List.of(0.5, 0.0, -1.0),
                "nested_dtype", List.of("float32", "float16"));
        boolean fourBit = in.consumeBoolean();
        String stateName = w + ".quant_state.bitsandbytes__" + (in.consumeBoolean() ? "nf4" : "fp4");
        List<Slot> slots = fourBit
                ? List.of(Slot.of(w, "U8", "I8", "F16"), Slot.of(w + ".absmax", "F32", "U8", "F16"),
                Slot.of(w + ".quant_map", "F32", "F16"), Slot.of(w + ".nested_absmax", "F32"),
                Slot.of(w + ".nested_quant_map", "F32"), Slot.of(stateName, "U8"))
                : List.of(Slot.of(w, "I8", "U8"), Slot.of(P + ".SCB", "F32", "F16"), Slot.of(w + "_format", "U8"),
                Slot.of(P + ".bias", "F16"));
        run(in, slots,
                map("quant_method", List.of("bitsandbytes"),
                        "load_in_4bit", List.of(true, false),
                        "load_in_8bit", List.of(true, false),
                        "bnb_4bit_quant_type", List.of("nf4", "fp4"),
                        "bnb_4bit_use_double_quant", List.of(true, false)),
                fourBit ? Map.of(stateName, state) : Map.of());
    }

    private static Map<String, List<Object>> map(Object... kv) {
        Map<String, List<Object>> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            @SuppressWarnings("unchecked") List<Object> values = (List<Object>) kv[i + 1];
            m.put((String) kv[i], values);
        }
        return m;
    }
}
