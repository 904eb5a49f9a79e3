package io.anamnesis.api.spi;

import io.anamnesis.api.DType;
import io.anamnesis.api.MetaValue;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;

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
     * The key/values of {@link OutputPlan#keyValues()} this writer will not store whole and
     * typed, each with the reason, so that a conversion can say what it dropped. The default
     * is every value that is not a string: a writer that knows only {@link OutputPlan#metadata()}
     * stores at most a rendering of them.
     */
    default SequencedMap<String, String> metadataLoss(OutputPlan plan) {
        SequencedMap<String, String> out = new LinkedHashMap<>();
        plan.keyValues().forEach((k, v) -> {
            if (!(v instanceof MetaValue.Str)) out.put(k, format() + " stores metadata as strings only, not a " + v.type().spelling());
        });
        return out;
    }

    /**
     * Writes the plan to {@code target}.
     *
     * @throws io.anamnesis.api.AnamnesisException unsupported dtypes, I/O failures, or
     *         failures of the plan's producers (which leave no target behind)
     */
    void write(OutputPlan plan, Path target, WriteOptions options);

    /**
     * Whether this format has a split layout of its own, in which one model is written as
     * several files that its readers open as one (GGUF: llama.cpp's {@code gguf-split}). A
     * format without one is written as a model folder of shards with an index instead
     * ({@link io.anamnesis.api.model.ModelFolderWriter}).
     */
    default boolean writesSplits() {
        return false;
    }

    /**
     * Writes the plan as splits of at most {@code maxBytes} of tensor data each (a tensor is
     * never cut; one larger than that gets a split of its own), named after {@code target}
     * as the format's tools name them, all complete or none left behind.
     *
     * @return the files written, in split order
     * @throws io.anamnesis.api.UnsupportedFeatureException when the format has no split layout
     */
    default List<Path> writeSplits(OutputPlan plan, Path target, long maxBytes, WriteOptions options) {
        throw new io.anamnesis.api.UnsupportedFeatureException(format() + " has no split layout of its own;"
                + " write a model folder of shards instead");
    }
}
