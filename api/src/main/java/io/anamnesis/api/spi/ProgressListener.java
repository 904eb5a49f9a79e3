package io.anamnesis.api.spi;

/** Hears how far a write has come. Called from worker threads: implementations are thread-safe. */
public interface ProgressListener {
    /** The whole output's size in bytes, once, before any {@link #advanced}. */
    void started(long totalBytes);

    /** {@code bytes} more output bytes are written. */
    void advanced(long bytes);

    ProgressListener NONE = new ProgressListener() {
        @Override
        public void started(long totalBytes) {
        }

        @Override
        public void advanced(long bytes) {
        }
    };

    /**
     * One progress over several files written one after another: {@code to} is told the
     * whole {@code total} now, and each file's own {@link #started} is not passed on.
     */
    static ProgressListener overFiles(ProgressListener to, long total) {
        to.started(total);
        return new ProgressListener() {
            @Override
            public void started(long totalBytes) {
            }

            @Override
            public void advanced(long bytes) {
                to.advanced(bytes);
            }
        };
    }
}
