package io.anamnesis.api;

import java.nio.file.Path;
import java.util.List;

/**
 * What {@link Anamnesis#export} wrote.
 *
 * @param output     where it went ({@code -} for standard output)
 * @param format     the writer's format
 * @param dtype      the output type asked for: the converter's ({@code f16}, {@code auto}, ...)
 *                   or a quantizer's target ({@code q4_k_m})
 * @param outputType the converter's output type the tensors were laid out at ({@code auto} resolved)
 * @param tensors    output tensors written
 * @param recovered  input tensors recovered from a quantized group on the way
 * @param bytes      tensor bytes written (headers not counted)
 * @param schemes    the scheme of each kind of recovered group
 * @param notes      what the exporter left out or changed that a user should hear of, one
 *                   sentence each ({@link io.anamnesis.api.spi.ExportedModel#notes})
 */
public record ModelExport(Path output, String format, String dtype, String outputType, int tensors, int recovered,
                          long bytes, List<String> schemes, List<String> notes) {
    public ModelExport {
        schemes = List.copyOf(schemes);
        notes = List.copyOf(notes);
    }

    /** An export with nothing to note. */
    public ModelExport(Path output, String format, String dtype, String outputType, int tensors, int recovered,
                       long bytes, List<String> schemes) {
        this(output, format, dtype, outputType, tensors, recovered, bytes, schemes, List.of());
    }
}
