package io.anamnesis.api;

import java.util.Optional;

/**
 * Every failure anamnesis reports on purpose. The hierarchy is sealed: a caller can switch
 * over the six leaves (or over {@link #kind()}) and be sure that nothing else arrives from a
 * file, a folder or a request. A caller's own mistakes are Java's: a null argument is a
 * {@link NullPointerException} naming it, an entry of another archive or a closed arena an
 * {@link IllegalArgumentException} or {@link IllegalStateException}.
 * Messages are one line and, where a tensor is at fault, name it.
 */
public abstract sealed class AnamnesisException extends RuntimeException
        permits MalformedFileException, LimitExceededException, SecurityViolationException,
        UnsupportedFeatureException, TensorIOException, InvalidRequestException {

    private final String tensor;

    protected AnamnesisException(String tensor, String message, Throwable cause) {
        super(tensor == null ? message : "tensor '" + tensor + "': " + message, cause);
        this.tensor = tensor;
    }

    /** The tensor at fault, when one is. */
    public Optional<String> tensor() {
        return Optional.ofNullable(tensor);
    }

    public abstract ErrorKind kind();
}
