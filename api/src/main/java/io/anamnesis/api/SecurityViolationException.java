package io.anamnesis.api;

/** The input tries to reach code: a pickle GLOBAL outside the allowlist. Nothing was executed. */
public final class SecurityViolationException extends AnamnesisException {
    public SecurityViolationException(String message) {
        super(null, message, null);
    }

    public SecurityViolationException(String message, Throwable cause) {
        super(null, message, cause);
    }

    private SecurityViolationException(String tensor, String message, Throwable cause) {
        super(tensor, message, cause);
    }

    /** The same failure, attributed to one tensor. */
    public static SecurityViolationException inTensor(String tensor, String message) {
        return new SecurityViolationException(tensor, message, null);
    }

    @Override
    public ErrorKind kind() {
        return ErrorKind.SECURITY;
    }
}
