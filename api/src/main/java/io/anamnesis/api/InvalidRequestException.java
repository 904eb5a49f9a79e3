package io.anamnesis.api;

/**
 * The request itself is wrong, not the file: a target a quantizer does not take with these
 * options, a setting it does not know, a type that cannot be made without an importance
 * matrix asked for without one. The caller can fix it by asking differently; the CLI maps
 * it to its usage exit code.
 */
public final class InvalidRequestException extends AnamnesisException {
    public InvalidRequestException(String message) {
        super(null, message, null);
    }

    private InvalidRequestException(String tensor, String message) {
        super(tensor, message, null);
    }

    /** The same failure, attributed to one tensor. */
    public static InvalidRequestException inTensor(String tensor, String message) {
        return new InvalidRequestException(tensor, message);
    }

    @Override
    public ErrorKind kind() {
        return ErrorKind.USAGE;
    }
}
