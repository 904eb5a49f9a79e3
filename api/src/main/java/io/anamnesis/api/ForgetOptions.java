package io.anamnesis.api;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * How to forget: the user's choices that are not the target itself.
 *
 * @param settings   scheme settings by their CLI names without dashes ({@code block-size},
 *                   {@code double-quant}, {@code granularity}, {@code scale-dtype}); a quantizer
 *                   refuses settings it does not know
 * @param importance an importance matrix, opened as an archive (llama.cpp's imatrix files),
 *                   for the schemes that weight their error by it
 * @param pure       quantize every eligible tensor to exactly the target type, with no
 *                   per-tensor mix ({@code llama-quantize --pure})
 * @param keep       tensors whose name matches any of these are left as they are
 * @param like       a published quantized checkpoint to imitate ({@code forget --like}): the
 *                   quantizer takes from it which tensors are quantized and how, instead of
 *                   from the settings (see {@link io.anamnesis.api.spi.Quantizer#imitates})
 */
public record ForgetOptions(Map<String, String> settings, Optional<TensorArchive> importance, boolean pure,
                            List<Pattern> keep, Optional<TensorArchive> like) {
    public ForgetOptions {
        settings = Map.copyOf(settings);
        keep = List.copyOf(keep);
    }

    /** Options without a reference to imitate. */
    public ForgetOptions(Map<String, String> settings, Optional<TensorArchive> importance, boolean pure,
                         List<Pattern> keep) {
        this(settings, importance, pure, keep, Optional.empty());
    }

    public static ForgetOptions defaults() {
        return new ForgetOptions(Map.of(), Optional.empty(), false, List.of());
    }

    /** These options, imitating {@code reference}. */
    public ForgetOptions imitating(TensorArchive reference) {
        return new ForgetOptions(settings, importance, pure, keep, Optional.of(reference));
    }

    /** Whether the user asked to leave this tensor alone. */
    public boolean keeps(String tensor) {
        for (Pattern p : keep) {
            if (p.matcher(tensor).find()) return true;
        }
        return false;
    }
}
