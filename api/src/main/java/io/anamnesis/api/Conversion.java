package io.anamnesis.api;

import java.nio.file.Path;
import java.util.List;

/**
 * What {@link Anamnesis#convert} (or {@link Anamnesis#copy}) wrote.
 *
 * @param output    where it went ({@code -} for standard output)
 * @param format    the writer's format
 * @param target    the dtype recovered tensors were produced in
 * @param tensors   output tensors written
 * @param recovered of them, tensors recovered from a quantized group
 * @param bytes     tensor bytes written (headers not counted)
 * @param schemes   the scheme of each kind of recovered group, e.g. {@code FP8 E4M3, block 128x128}
 */
public record Conversion(Path output, String format, DType target, int tensors, int recovered, long bytes,
                         List<String> schemes) {
    public Conversion {
        schemes = List.copyOf(schemes);
    }
}
