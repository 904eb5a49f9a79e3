package io.anamnesis.api;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * An element type, described by its geometry rather than by an enum ordinal so that
 * plugins can add their own (a GGUF module adds {@code Q4_K}: 256 elements in 144 bytes).
 *
 * <p>Two dtypes are the same when all four components are equal. Names follow the
 * safetensors spelling ({@code F8_E4M3}, {@code BF16}) for scalar types and ggml's for
 * block types ({@code Q4_K}).
 *
 * @param name          canonical upper-case name
 * @param kind          what the bytes mean
 * @param blockElements logical elements in one block (1 for byte-sized scalars, 2 for F4)
 * @param blockBytes    bytes in one block
 */
public record DType(String name, Kind kind, int blockElements, int blockBytes) {

    /** What a dtype's bytes hold. */
    public enum Kind {
        BOOL, UNSIGNED_INT, SIGNED_INT, FLOAT, COMPLEX,
        /** Codes that only a quantization scheme can turn back into numbers (GGUF blocks). */
        QUANTIZED
    }

    public DType {
        if (name == null || name.isBlank()) throw new IllegalArgumentException("dtype name is empty");
        if (kind == null) throw new IllegalArgumentException("dtype kind is null");
        if (blockElements < 1 || blockBytes < 1) {
            throw new IllegalArgumentException("dtype " + name + " has an empty block");
        }
    }

    // Every dtype of the safetensors spec. Sub-byte types count logical elements.
    public static final DType BOOL = new DType("BOOL", Kind.BOOL, 1, 1);
    public static final DType U8 = new DType("U8", Kind.UNSIGNED_INT, 1, 1);
    public static final DType I8 = new DType("I8", Kind.SIGNED_INT, 1, 1);
    public static final DType U16 = new DType("U16", Kind.UNSIGNED_INT, 1, 2);
    public static final DType I16 = new DType("I16", Kind.SIGNED_INT, 1, 2);
    public static final DType U32 = new DType("U32", Kind.UNSIGNED_INT, 1, 4);
    public static final DType I32 = new DType("I32", Kind.SIGNED_INT, 1, 4);
    public static final DType U64 = new DType("U64", Kind.UNSIGNED_INT, 1, 8);
    public static final DType I64 = new DType("I64", Kind.SIGNED_INT, 1, 8);
    public static final DType F4 = new DType("F4", Kind.FLOAT, 2, 1);
    public static final DType F6_E2M3 = new DType("F6_E2M3", Kind.FLOAT, 4, 3);
    public static final DType F6_E3M2 = new DType("F6_E3M2", Kind.FLOAT, 4, 3);
    public static final DType F8_E5M2 = new DType("F8_E5M2", Kind.FLOAT, 1, 1);
    public static final DType F8_E4M3 = new DType("F8_E4M3", Kind.FLOAT, 1, 1);
    public static final DType F8_E8M0 = new DType("F8_E8M0", Kind.FLOAT, 1, 1);
    public static final DType F8_E4M3FNUZ = new DType("F8_E4M3FNUZ", Kind.FLOAT, 1, 1);
    public static final DType F8_E5M2FNUZ = new DType("F8_E5M2FNUZ", Kind.FLOAT, 1, 1);
    public static final DType F16 = new DType("F16", Kind.FLOAT, 1, 2);
    public static final DType BF16 = new DType("BF16", Kind.FLOAT, 1, 2);
    public static final DType F32 = new DType("F32", Kind.FLOAT, 1, 4);
    public static final DType F64 = new DType("F64", Kind.FLOAT, 1, 8);
    public static final DType C64 = new DType("C64", Kind.COMPLEX, 1, 8);

    /** The safetensors spec's dtypes, in the spec's order. */
    public static final List<DType> SAFETENSORS = List.of(
            BOOL, F4, F6_E2M3, F6_E3M2, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, F8_E4M3FNUZ,
            F8_E5M2FNUZ, I16, U16, F16, BF16, I32, U32, F32, C64, F64, I64, U64);

    private static final Map<String, DType> BY_NAME = SAFETENSORS.stream()
            .collect(Collectors.toUnmodifiableMap(DType::name, Function.identity()));

    /** Looks up one of the {@link #SAFETENSORS} dtypes by name (case-insensitive). */
    public static Optional<DType> standard(String name) {
        return Optional.ofNullable(name == null ? null : BY_NAME.get(name.toUpperCase(Locale.ROOT)));
    }

    /** The output dtypes recovery can produce, by the CLI's spelling: bf16, f16, f32. */
    public static DType recoveryTarget(String spelling) {
        return switch (spelling.toLowerCase(Locale.ROOT)) {
            case "bf16" -> BF16;
            case "f16", "fp16" -> F16;
            case "f32", "fp32" -> F32;
            default -> throw new IllegalArgumentException(
                    "unknown target dtype '" + spelling + "' (expected bf16, f16 or f32)");
        };
    }

    /** True for dtypes whose size in bytes is a whole multiple of their element count. */
    public boolean isByteSized() {
        return blockElements == 1;
    }

    /** Bytes per element for byte-sized dtypes. */
    public int elementBytes() {
        if (blockElements != 1) throw new IllegalStateException(name + " is not byte-sized");
        return blockBytes;
    }

    /** True when {@code elements} fill a whole number of blocks. */
    public boolean fitsWholeBlocks(long elements) {
        return elements >= 0 && elements % blockElements == 0;
    }

    /**
     * Bytes that {@code elements} take.
     *
     * @throws ArithmeticException      on overflow
     * @throws IllegalArgumentException when the elements do not fill whole blocks
     */
    public long byteSize(long elements) {
        if (!fitsWholeBlocks(elements)) {
            throw new IllegalArgumentException(elements + " elements are not a whole number of "
                    + name + " blocks of " + blockElements);
        }
        return Math.multiplyExact(elements / blockElements, (long) blockBytes);
    }

    // equals and hashCode are written out, with the meaning a record gives them: the record's
    // own are linked at their first call through an invokedynamic bootstrap that the AOT cache
    // does not keep, which spun method handles for a few ms at every start of amn.

    @Override
    public boolean equals(Object o) {
        return o instanceof DType d && blockElements == d.blockElements && blockBytes == d.blockBytes
                && kind == d.kind && name.equals(d.name);
    }

    @Override
    public int hashCode() {
        return ((name.hashCode() * 31 + kind.hashCode()) * 31 + blockElements) * 31 + blockBytes;
    }

    @Override
    public String toString() {
        return name;
    }
}
