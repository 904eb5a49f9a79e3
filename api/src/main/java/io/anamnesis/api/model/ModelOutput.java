package io.anamnesis.api.model;

/**
 * How a conversion lays out what it writes: one file, a model folder of shards with an index
 * ({@link ModelFolderWriter}), or the format's own splits ({@link io.anamnesis.api.spi.FormatWriter#writeSplits}).
 */
public sealed interface ModelOutput {

    /** One file (or a stream). */
    record File() implements ModelOutput {
    }

    /** A model folder, shards of at most {@code maxShardBytes} each. */
    record Folder(long maxShardBytes) implements ModelOutput {
        public Folder {
            if (maxShardBytes < 1) throw new IllegalArgumentException("a shard holds at least one byte");
        }
    }

    /** The format's own splits of at most {@code maxBytes} of tensor data each, beside the target. */
    record Splits(long maxBytes) implements ModelOutput {
        public Splits {
            if (maxBytes < 1) throw new IllegalArgumentException("a split holds at least one byte");
        }
    }

    ModelOutput FILE = new File();
}
