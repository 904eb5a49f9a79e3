package io.anamnesis.cli;

/** The command line itself is wrong (exit 2): a bad reference, an output that would overwrite the input. */
final class UsageException extends RuntimeException {
    UsageException(String message) {
        super(message);
    }
}
