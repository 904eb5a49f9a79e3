package io.anamnesis.quant.gguf.llama;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Comparator;
import java.util.OptionalInt;

/** The layer number in a GGUF tensor name, and the tensor order it gives. */
public final class LayerNames {
    private LayerNames() {
    }

    /**
     * The {@code N} of a name starting {@code blk.N.}: what {@code sscanf(name, "blk.%d.", &layer)}
     * reads (white space and a sign before the digits are accepted, whatever follows them),
     * empty when it reads nothing.
     */
    public static OptionalInt parseLayer(String name) {
        if (!name.startsWith("blk.")) return OptionalInt.empty();
        int i = 4;
        while (i < name.length() && " \t\n\u000B\f\r".indexOf(name.charAt(i)) >= 0) i++; // C isspace
        boolean negative = false;
        if (i < name.length() && (name.charAt(i) == '+' || name.charAt(i) == '-')) negative = name.charAt(i++) == '-';
        int start = i;
        long v = 0;
        while (i < name.length() && name.charAt(i) >= '0' && name.charAt(i) <= '9' && v <= Integer.MAX_VALUE) {
            v = v * 10 + (name.charAt(i++) - '0');
        }
        if (i == start) return OptionalInt.empty();
        v = negative ? -v : v;
        return OptionalInt.of((int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, v)));
    }

    /** {@link #parseLayer}, or -1 (the comparator's default) when the name has no layer. */
    public static int layerOf(String name) {
        return parseLayer(name).orElse(-1);
    }

    /**
     * llama.cpp's tensor order ({@code weight_name_comparer} of src/llama-model-loader.h, the
     * order of its weights map and so of a quantized file): by layer number first (tensors
     * outside a layer, -1, come first), then by name as bytes.
     */
    public static final Comparator<String> LLAMA_ORDER = Comparator.comparingInt(LayerNames::layerOf)
            .thenComparing((a, b) -> Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8)));
}
