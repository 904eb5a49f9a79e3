package io.anamnesis.api;

/** The input is recognized but not supported here, or the module that would handle it is not installed. */
public final class UnsupportedFeatureException extends AnamnesisException {
    public UnsupportedFeatureException(String message) {
        super(null, message, null);
    }

    public UnsupportedFeatureException(String message, Throwable cause) {
        super(null, message, cause);
    }

    private UnsupportedFeatureException(String tensor, String message, Throwable cause) {
        super(tensor, message, cause);
    }

    /** The same failure, attributed to one tensor. */
    public static UnsupportedFeatureException inTensor(String tensor, String message) {
        return new UnsupportedFeatureException(tensor, message, null);
    }

    @Override
    public ErrorKind kind() {
        return ErrorKind.UNSUPPORTED;
    }
}
