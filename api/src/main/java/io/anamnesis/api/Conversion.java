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
 * @param files     the tensor files written: the output itself, a model folder's shards, or
 *                  the splits, in order
 */
public record Conversion(Path output, String format, DType target, int tensors, int recovered, long bytes,
                         List<String> schemes, List<Path> files) {
    public Conversion {
        schemes = List.copyOf(schemes);
        files = List.copyOf(files);
    }

    /** A conversion that wrote one file, {@code output}. */
    public Conversion(Path output, String format, DType target, int tensors, int recovered, long bytes,
                      List<String> schemes) {
        this(output, format, target, tensors, recovered, bytes, schemes, List.of(output));
    }
}
