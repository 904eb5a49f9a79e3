package io.anamnesis.api;

/** The input declares sizes, counts, nesting or expansion beyond a {@link ParseLimits} value, or beyond what the file can hold. */
public final class LimitExceededException extends AnamnesisException {
    public LimitExceededException(String message) {
        super(null, message, null);
    }

    public LimitExceededException(String message, Throwable cause) {
        super(null, message, cause);
    }

    private LimitExceededException(String tensor, String message, Throwable cause) {
        super(tensor, message, cause);
    }

    /** The same failure, attributed to one tensor. */
    public static LimitExceededException inTensor(String tensor, String message) {
        return new LimitExceededException(tensor, message, null);
    }

    @Override
    public ErrorKind kind() {
        return ErrorKind.LIMIT;
    }
}
