package io.anamnesis.api;

import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;

/**
 * What {@link Anamnesis#convert} (or {@link Anamnesis#copy}) wrote.
 *
 * @param output          where it went ({@code -} for standard output)
 * @param format          the writer's format
 * @param target          the dtype recovered tensors were produced in
 * @param tensors         output tensors written
 * @param recovered       of them, tensors recovered from a quantized group
 * @param bytes           tensor bytes written (headers not counted)
 * @param schemes         the scheme of each kind of recovered group, e.g. {@code FP8 E4M3, block 128x128}
 * @param metadataKeys    metadata key/values written whole
 * @param droppedMetadata metadata keys of the input (or set by the caller) that were not written
 *                        whole, each with the reason: no conversion loses a key unsaid
 * @param files           the tensor files written: the output itself, a model folder's shards, or
 *                        the splits, in order
 */
public record Conversion(Path output, String format, DType target, int tensors, int recovered, long bytes,
                         List<String> schemes, int metadataKeys, SequencedMap<String, String> droppedMetadata,
                         List<Path> files) {
    public Conversion {
        schemes = List.copyOf(schemes);
        droppedMetadata = Collections.unmodifiableSequencedMap(new LinkedHashMap<>(droppedMetadata));
        files = List.copyOf(files);
    }

    /** A conversion that wrote one file, {@code output}. */
    public Conversion(Path output, String format, DType target, int tensors, int recovered, long bytes,
                      List<String> schemes, int metadataKeys, SequencedMap<String, String> droppedMetadata) {
        this(output, format, target, tensors, recovered, bytes, schemes, metadataKeys, droppedMetadata, List.of(output));
    }
}
