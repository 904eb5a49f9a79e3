package io.anamnesis.api.spi;

/**
 * How a writer runs.
 *
 * @param threads  tensors produced at once (1 or more); output bytes do not depend on it
 * @param progress told how many output bytes are done
 */
public record WriteOptions(int threads, ProgressListener progress) {
    public WriteOptions {
        if (threads < 1) throw new IllegalArgumentException("threads must be at least 1, was " + threads);
        if (progress == null) progress = ProgressListener.NONE;
    }

    /** One thread per available processor, no progress reporting. */
    public static WriteOptions defaults() {
        return new WriteOptions(Runtime.getRuntime().availableProcessors(), ProgressListener.NONE);
    }

    public static WriteOptions threads(int threads) {
        return new WriteOptions(threads, ProgressListener.NONE);
    }
}
