package io.anamnesis.api;

/**
 * The ways reading, writing or a request can fail, each with the CLI exit code it maps to,
 * so a server can answer without reading messages. The short names match the corpus'
 * {@code expect_error} values.
 */
public enum ErrorKind {
    /** Malformed or truncated input. */
    MALFORMED("parse", 3),
    /** The input declares sizes, counts, depth or expansion beyond a {@link ParseLimits} value. */
    LIMIT("limit", 4),
    /** The input reaches for code execution (a pickle GLOBAL outside the allowlist). */
    SECURITY("security", 5),
    /** Recognized but not supported, or no installed module handles it. */
    UNSUPPORTED("unsupported", 6),
    /** Reading or writing the file system failed. */
    IO("io", 7),
    /**
     * The request is wrong, not the file (an option combination a quantizer refuses, a type
     * that needs an importance matrix asked for without one): the CLI's usage exit code.
     */
    USAGE("usage", 2);

    private final String shortName;
    private final int exitCode;

    ErrorKind(String shortName, int exitCode) {
        this.shortName = shortName;
        this.exitCode = exitCode;
    }

    /** {@code parse}, {@code limit}, {@code security}, {@code unsupported}, {@code io} or {@code usage}. */
    public String shortName() {
        return shortName;
    }

    public int exitCode() {
        return exitCode;
    }
}
