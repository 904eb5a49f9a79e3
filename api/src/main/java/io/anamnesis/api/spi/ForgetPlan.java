package io.anamnesis.api.spi;

import io.anamnesis.api.MetaValue;

import java.util.List;
import java.util.Map;

/**
 * What forgetting a model produces, decided before any byte is encoded.
 *
 * @param tensors   every output tensor in output order: encoded payloads and their companions,
 *                  and the tensors left as they are
 * @param metadata  string metadata to store ({@code quantization_config} for safetensors)
 * @param typed     typed key/values to store ({@code general.file_type} for GGUF)
 * @param decisions one line per input tensor: what it became and why
 * @param warnings  what the user should know but that does not stop the run (a tensor with
 *                  no importance-matrix entry, rows that fell back to another type), one line
 *                  each; the CLI prints them as warnings
 */
public record ForgetPlan(List<PlannedTensor> tensors, Map<String, String> metadata, Map<String, MetaValue> typed,
                         List<Decision> decisions, List<String> warnings) {
    public ForgetPlan {
        tensors = List.copyOf(tensors);
        metadata = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(metadata));
        typed = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(typed));
        decisions = List.copyOf(decisions);
        warnings = List.copyOf(warnings);
    }

    /** A plan without warnings. */
    public ForgetPlan(List<PlannedTensor> tensors, Map<String, String> metadata, Map<String, MetaValue> typed,
                      List<Decision> decisions) {
        this(tensors, metadata, typed, decisions, List.of());
    }

    /**
     * One input tensor's fate.
     *
     * @param tensor  input name
     * @param becomes what it is written as: a target type ({@code q4_k}), or its dtype when kept
     * @param encoded whether it was quantized
     * @param why     the rule that decided, for the summary ("1-D tensors stay F32", "--keep")
     */
    public record Decision(String tensor, String becomes, boolean encoded, String why) {
    }

    /** How many input tensors were quantized. */
    public long encodedCount() {
        return decisions.stream().filter(Decision::encoded).count();
    }
}
