package io.anamnesis.api;

/**
 * Bounds every reader checks a header-declared size or count against <em>before</em>
 * allocating anything, so a small hostile file cannot make a reader allocate, inflate or
 * recurse without end. Breaking one is a {@link LimitExceededException}. Sizes that exceed
 * what the file itself holds are refused whatever the limits say.
 *
 * @param maxHeaderBytes     a format's header or index (safetensors JSON: 100 MB as in the spec's reference)
 * @param maxTensors         tensors in one file
 * @param maxRank            dimensions of one tensor
 * @param maxMetadataEntries metadata keys (GGUF KV pairs, safetensors {@code __metadata__})
 * @param maxStringBytes     one string (a key, a metadata value, a pickle string)
 * @param maxArrayLength     elements of one metadata array (GGUF tokenizer vocabularies)
 * @param maxNestingDepth    nesting of arrays, JSON, pickle containers
 * @param maxPickleBytes     size of one pickle stream
 * @param maxPickleValues    values one pickle may create or memoize
 * @param maxInflatedBytes   bytes one compressed member may inflate to
 * @param maxInflationRatio  inflated / compressed size for one member (zip bombs)
 */
public record ParseLimits(
        long maxHeaderBytes,
        long maxTensors,
        int maxRank,
        long maxMetadataEntries,
        long maxStringBytes,
        long maxArrayLength,
        int maxNestingDepth,
        long maxPickleBytes,
        long maxPickleValues,
        long maxInflatedBytes,
        long maxInflationRatio) {

    public ParseLimits {
        if (maxHeaderBytes < 0 || maxTensors < 0 || maxRank < 0 || maxMetadataEntries < 0
                || maxStringBytes < 0 || maxArrayLength < 0 || maxNestingDepth < 0
                || maxPickleBytes < 0 || maxPickleValues < 0 || maxInflatedBytes < 0
                || maxInflationRatio < 1) {
            throw new IllegalArgumentException("limits must not be negative");
        }
    }

    private static final ParseLimits DEFAULTS = new ParseLimits(
            100_000_000L,        // safetensors' own cap
            1L << 20,
            32,
            1L << 20,
            64L << 20,
            1L << 26,
            256,
            1L << 30,
            1L << 24,
            64L << 30,
            1024);

    /** Limits generous enough for any real model (405B checkpoints, 256k-token vocabularies). */
    public static ParseLimits defaults() {
        return DEFAULTS;
    }

    public ParseLimits withMaxHeaderBytes(long v) {
        return new ParseLimits(v, maxTensors, maxRank, maxMetadataEntries, maxStringBytes, maxArrayLength,
                maxNestingDepth, maxPickleBytes, maxPickleValues, maxInflatedBytes, maxInflationRatio);
    }

    public ParseLimits withMaxTensors(long v) {
        return new ParseLimits(maxHeaderBytes, v, maxRank, maxMetadataEntries, maxStringBytes, maxArrayLength,
                maxNestingDepth, maxPickleBytes, maxPickleValues, maxInflatedBytes, maxInflationRatio);
    }

    public ParseLimits withMaxNestingDepth(int v) {
        return new ParseLimits(maxHeaderBytes, maxTensors, maxRank, maxMetadataEntries, maxStringBytes,
                maxArrayLength, v, maxPickleBytes, maxPickleValues, maxInflatedBytes, maxInflationRatio);
    }

    public ParseLimits withMaxInflatedBytes(long v) {
        return new ParseLimits(maxHeaderBytes, maxTensors, maxRank, maxMetadataEntries, maxStringBytes,
                maxArrayLength, maxNestingDepth, maxPickleBytes, maxPickleValues, v, maxInflationRatio);
    }

    public ParseLimits withMaxPickleValues(long v) {
        return new ParseLimits(maxHeaderBytes, maxTensors, maxRank, maxMetadataEntries, maxStringBytes,
                maxArrayLength, maxNestingDepth, maxPickleBytes, v, maxInflatedBytes, maxInflationRatio);
    }

    /** Throws a {@link LimitExceededException} when {@code value > max}. */
    public static void check(String what, long value, long max) {
        if (value > max) {
            throw new LimitExceededException(what + " is " + value + ", over the limit of " + max);
        }
    }
}
