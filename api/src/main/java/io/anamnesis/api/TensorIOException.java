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

    /**
     * Whether {@code t} is the JVM's report of a memory-mapped page that could not be read
     * (SIGBUS): the file was truncated, or a network file system dropped its pages, while a
     * mapping of it was in use.
     */
    public static boolean isMappingFault(Throwable t) {
        return t instanceof InternalError
                && t.getMessage() != null && t.getMessage().contains("fault occurred")
                && t.getMessage().contains("unsafe memory access");
    }

    /** What a {@linkplain #isMappingFault mapping fault} means to the caller. */
    public static TensorIOException inputChanged(Throwable fault) {
        return new TensorIOException("the input changed while it was being read (truncated by another process,"
                + " or its pages were lost); nothing was written", fault);
    }

    @Override
    public ErrorKind kind() {
        return ErrorKind.IO;
    }
}
