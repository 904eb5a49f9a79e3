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

    /**
     * 100,000,000 bytes of header or index read into the heap before any tensor: the
     * safetensors JSON header, GGUF key/values and tensor infos, an NPY header, a zip central
     * directory, a config file beside the input. The value is safetensors' own cap (its
     * reference implementation refuses larger headers), and GGUF headers that carry a
     * 256k-token vocabulary are a small fraction of it.
     */
    public static final long DEFAULT_MAX_HEADER_BYTES = 100_000_000L;

    /**
     * 2^20 tensors in one file (or storages in one pickle): bounds the index held in heap to
     * a few hundred MiB. The largest published checkpoints hold under a hundred thousand
     * tensors across all their shards.
     */
    public static final long DEFAULT_MAX_TENSORS = 1L << 20;

    /**
     * 32 dimensions per tensor: bounds the shape arrays a header makes us allocate. It is
     * NumPy's limit before 2.0; GGUF allows 4 and model weights use at most 5.
     */
    public static final int DEFAULT_MAX_RANK = 32;

    /**
     * 2^20 metadata entries (GGUF key/values, safetensors {@code __metadata__} keys, a
     * checkpoint's non-tensor values): bounds the loop and the map a declared count starts.
     * GGUF files carry tens of keys; checkpoints with optimizer state thousands of values.
     */
    public static final long DEFAULT_MAX_METADATA_ENTRIES = 1L << 20;

    /**
     * 64 MiB for one string (a key, a metadata value, a pickle string, a quant state blob):
     * bounds each allocation a declared length asks for. The longest real strings are whole
     * JSON documents kept as one value, such as a {@code tokenizer.json} in a GGUF file
     * (about 33 MB for Gemma 3's vocabulary).
     */
    public static final long DEFAULT_MAX_STRING_BYTES = 64L << 20;

    /**
     * 2^26 elements of one metadata array (GGUF tokens, scores, merges), and of the
     * per-input-row tables the GPTQ and AWQ kernels keep: bounds the arrays a declared length
     * allocates. Vocabularies have at most 262,144 tokens and merges about twice that; layers
     * at most a few hundred thousand inputs.
     */
    public static final long DEFAULT_MAX_ARRAY_LENGTH = 1L << 26;

    /**
     * 256 levels of nesting of JSON, GGUF arrays, NPY header literals and pickle containers
     * (and the pickle VM's MARK stack): bounds the recursion and the stacks a parser keeps, far
     * within a thread's stack. Real files nest a handful of levels.
     */
    public static final int DEFAULT_MAX_NESTING_DEPTH = 256;

    /**
     * 1 GiB of one pickle stream, which is read into one heap buffer (so it also stays under a
     * Java array's 2 GiB). A {@code data.pkl} describes tensors, not their data, and is
     * kilobytes to a few megabytes; the rest is room for large non-tensor values.
     */
    public static final long DEFAULT_MAX_PICKLE_BYTES = 1L << 30;

    /**
     * 2^24 values one pickle may create or memoize, which also caps the visits of the walk
     * over them: bounds the VM's heap and memo replay. A checkpoint's pickle creates a few
     * values per tensor (a rebuild call, a storage, sizes, strides), so this covers
     * {@link #DEFAULT_MAX_TENSORS} tensors many times over.
     */
    public static final long DEFAULT_MAX_PICKLE_VALUES = 1L << 24;

    /**
     * 64 GiB that one compressed member may inflate to, or one declared storage or view may
     * span: bounds what a small file can make a reader produce. The largest single tensors of
     * published models are a few GiB.
     */
    public static final long DEFAULT_MAX_INFLATED_BYTES = 64L << 30;

    /**
     * 1024 bytes inflated per stored byte of one member (zip bombs), the budget that also
     * bounds what repeated or expanded views of a {@code .pth} may read (this ratio times the
     * file size, plus {@link #DEFAULT_MAX_INFLATED_BYTES}). Trained weights compress by less
     * than 2 to 1, and one DEFLATE stream cannot exceed about 1032 to 1; only a member of one
     * repeated byte comes near that (an all-zero array of 16 MiB deflates at about 1028 to 1
     * and is refused: such a file needs a raised ratio).
     */
    public static final long DEFAULT_MAX_INFLATION_RATIO = 1024;

    private static final ParseLimits DEFAULTS = new ParseLimits(
            DEFAULT_MAX_HEADER_BYTES,
            DEFAULT_MAX_TENSORS,
            DEFAULT_MAX_RANK,
            DEFAULT_MAX_METADATA_ENTRIES,
            DEFAULT_MAX_STRING_BYTES,
            DEFAULT_MAX_ARRAY_LENGTH,
            DEFAULT_MAX_NESTING_DEPTH,
            DEFAULT_MAX_PICKLE_BYTES,
            DEFAULT_MAX_PICKLE_VALUES,
            DEFAULT_MAX_INFLATED_BYTES,
            DEFAULT_MAX_INFLATION_RATIO);

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

    public ParseLimits withMaxArrayLength(long v) {
        return new ParseLimits(maxHeaderBytes, maxTensors, maxRank, maxMetadataEntries, maxStringBytes, v,
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
