package io.anamnesis.api;

/** Reading the input or writing the output failed in the file system. */
public final class TensorIOException extends AnamnesisException {
    public TensorIOException(String message) {
        super(null, message, null);
    }

    public TensorIOException(String message, Throwable cause) {
        super(null, message, cause);
    }

    private TensorIOException(String tensor, String message, Throwable cause) {
        super(tensor, message, cause);
    }

    /** The same failure, attributed to one tensor. */
    public static TensorIOException inTensor(String tensor, String message) {
        return new TensorIOException(tensor, message, null);
    }

    @Override
    public ErrorKind kind() {
        return ErrorKind.IO;
    }
}
