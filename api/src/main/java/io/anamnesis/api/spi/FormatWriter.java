package io.anamnesis.api.spi;

import io.anamnesis.api.DType;

import java.nio.file.Path;
import java.util.List;

/**
 * Writes an {@link OutputPlan} as one file format. Found with {@link java.util.ServiceLoader}.
 *
 * <p>Contract: the target appears complete or not at all (write a temporary file beside it,
 * then rename; {@link io.anamnesis.api.write.AtomicOutput} does this), tensors are produced
 * by the plan's producers in bounded memory, and the bytes are the same at any thread count.
 */
public interface FormatWriter {

    /** Short lower-case name, matching the reader of the same format. */
    String format();

    /** Lower-case file extensions without dots; the first one names derived outputs. */
    List<String> fileExtensions();

    /** One line for {@code amn formats}. */
    String description();

    /** Whether this format can store tensors of this dtype. */
    boolean supports(DType dtype);

    /**
     * Writes the plan to {@code target}.
     *
     * @throws io.anamnesis.api.AnamnesisException unsupported dtypes, I/O failures, or
     *         failures of the plan's producers (which leave no target behind)
     */
    void write(OutputPlan plan, Path target, WriteOptions options);
}
