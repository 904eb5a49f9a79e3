package io.anamnesis.api;

/** The input is malformed or truncated: bad magic, a length past the end of the file, overlapping data, invalid UTF-8. */
public final class MalformedFileException extends AnamnesisException {
    public MalformedFileException(String message) {
        super(null, message, null);
    }

    public MalformedFileException(String message, Throwable cause) {
        super(null, message, cause);
    }

    private MalformedFileException(String tensor, String message, Throwable cause) {
        super(tensor, message, cause);
    }

    /** The same failure, attributed to one tensor. */
    public static MalformedFileException inTensor(String tensor, String message) {
        return new MalformedFileException(tensor, message, null);
    }

    @Override
    public ErrorKind kind() {
        return ErrorKind.MALFORMED;
    }
}
