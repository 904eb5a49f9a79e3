package io.anamnesis.api.spi;

import io.anamnesis.api.Role;
import io.anamnesis.api.Shape;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One group of stored tensors that a {@link Dequantizer} turns back into one dense tensor
 * (GPTQ: {@code qweight + qzeros + scales + g_idx -> weight [out, in]}).
 *
 * @param outputName  name of the recovered tensor
 * @param outputShape its row-major shape ({@code nn.Linear}'s {@code [out, in]} for weights)
 * @param scheme      the dequantizer's {@link Dequantizer#scheme()}
 * @param description human-readable scheme variant: "GPTQ 4-bit, group 128, act-order, v1 zeros"
 * @param inputs      every stored tensor the group consumes with its role; the first entry
 *                    is the quantized payload and fixes where the output goes in file order
 * @param kernel      the arithmetic
 */
public record Recovery(String outputName, Shape outputShape, String scheme, String description,
                       Map<String, io.anamnesis.api.Role> inputs, RecoveryKernel kernel) {
    public Recovery {
        if (inputs.isEmpty()) throw new IllegalArgumentException("recovery of " + outputName + " consumes nothing");
        inputs = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(inputs));
    }

    /** The stored tensor whose place in file order the output takes. */
    public String primaryInput() {
        return inputs.keySet().iterator().next();
    }

    public Role roleOf(String tensor) {
        return inputs.get(tensor);
    }
}
