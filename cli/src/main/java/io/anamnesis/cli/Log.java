package io.anamnesis.cli;

/**
 * Debug logging through SLF4J, switched on by {@code --debug} only. Until then nothing
 * touches {@code LoggerFactory}, so the logging backend is never initialized on the fast
 * path ({@code amn inspect} must start in well under 100 ms).
 */
final class Log {
    private static volatile boolean enabled;

    private Log() {
    }

    /** Set by each run from its own {@code --debug}. */
    static void enabled(boolean on) {
        enabled = on;
    }

    static boolean enabled() {
        return enabled;
    }

    static void debug(String format, Object... args) {
        if (enabled) Holder.LOGGER.debug(format, args);
    }

    /** Loaded on the first debug message, not before. */
    private static final class Holder {
        static final org.slf4j.Logger LOGGER = org.slf4j.LoggerFactory.getLogger("amn");
    }
}
