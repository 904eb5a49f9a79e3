package io.anamnesis.format.gguf;

import io.anamnesis.api.DType;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Every ggml tensor type as GGUF stores it: ggml's name, the id written in a tensor info
 * ({@code ggml_type} in ggml.h) and the block geometry of {@code ggml_type_traits}
 * ({@code blck_size} elements in {@code type_size} bytes), in id order. Sizes follow the
 * block structs of ggml-common.h (QK_K = 256).
 *
 * <p>quant-gguf's {@code GgufBlockType} writes the block types the same way (name, id,
 * elements, bytes); test-corpus checks that the two tables agree on every id either knows.
 *
 * <p>Scalar types surface as the api's standard dtypes; block types as
 * {@code DType(name, QUANTIZED, blockElements, blockBytes)} with ggml's upper-case name,
 * which is what the GGUF dequantizers match on.
 */
public enum GgufType {
    F32(0, DType.F32),
    F16(1, DType.F16),
    Q4_0(2, 32, 18),
    Q4_1(3, 32, 20),
    Q5_0(6, 32, 22),
    Q5_1(7, 32, 24),
    Q8_0(8, 32, 34),
    /** ggml's own layout {f16 d; f16 s; int8 qs[32]}; gguf-py's size table still says 40 bytes. */
    Q8_1(9, 32, 36),
    Q2_K(10, 256, 84),
    Q3_K(11, 256, 110),
    Q4_K(12, 256, 144),
    Q5_K(13, 256, 176),
    Q6_K(14, 256, 210),
    Q8_K(15, 256, 292),
    IQ2_XXS(16, 256, 66),
    IQ2_XS(17, 256, 74),
    IQ3_XXS(18, 256, 98),
    IQ1_S(19, 256, 50),
    IQ4_NL(20, 32, 18),
    IQ3_S(21, 256, 110),
    IQ2_S(22, 256, 82),
    IQ4_XS(23, 256, 136),
    I8(24, DType.I8),
    I16(25, DType.I16),
    I32(26, DType.I32),
    I64(27, DType.I64),
    F64(28, DType.F64),
    IQ1_M(29, 256, 56),
    BF16(30, DType.BF16),
    TQ1_0(34, 256, 54),
    TQ2_0(35, 256, 66),
    MXFP4(39, 32, 17),
    NVFP4(40, 64, 36),
    Q1_0(41, 128, 18),
    Q2_0(42, 64, 18);

    private final int ggmlId;
    private final int blockElements;
    private final int blockBytes;
    private final DType dtype;

    /** A block type: its dtype is ggml's name with the block geometry. */
    GgufType(int ggmlId, int blockElements, int blockBytes) {
        this.ggmlId = ggmlId;
        this.blockElements = blockElements;
        this.blockBytes = blockBytes;
        this.dtype = new DType(name(), DType.Kind.QUANTIZED, blockElements, blockBytes);
    }

    /** A scalar type: one element per block, the api's standard dtype. */
    GgufType(int ggmlId, DType dtype) {
        this.ggmlId = ggmlId;
        this.blockElements = 1;
        this.blockBytes = dtype.blockBytes();
        this.dtype = dtype;
    }

    /** Every type, in id order. */
    public static final List<GgufType> ALL = List.of(values());

    /**
     * Ids ggml once used and has since removed; files that still carry them get a message
     * saying so instead of "unknown".
     */
    private static final Map<Integer, String> REMOVED = Map.of(
            4, "Q4_2", 5, "Q4_3",
            31, "Q4_0_4_4", 32, "Q4_0_4_8", 33, "Q4_0_8_8",
            36, "IQ4_NL_4_4", 37, "IQ4_NL_4_8", 38, "IQ4_NL_8_8");

    private static final Map<Integer, GgufType> BY_ID = Arrays.stream(values())
            .collect(Collectors.toUnmodifiableMap(GgufType::ggmlId, Function.identity()));
    private static final Map<String, GgufType> BY_NAME = Arrays.stream(values())
            .collect(Collectors.toUnmodifiableMap(GgufType::name, Function.identity()));
    private static final Map<DType, GgufType> BY_DTYPE = Arrays.stream(values())
            .collect(Collectors.toUnmodifiableMap(GgufType::dtype, Function.identity()));

    /** The type of this {@code ggml_type} id, if ggml defines it. */
    public static Optional<GgufType> byId(long id) {
        return id < 0 || id > Integer.MAX_VALUE ? Optional.empty() : Optional.ofNullable(BY_ID.get((int) id));
    }

    /** The type of ggml's name for it ({@code Q4_K}, case-insensitive). */
    public static Optional<GgufType> byName(String name) {
        return Optional.ofNullable(BY_NAME.get(name.toUpperCase(java.util.Locale.ROOT)));
    }

    /** The type a dtype is stored as, if GGUF can store it. */
    public static Optional<GgufType> of(DType dtype) {
        return Optional.ofNullable(BY_DTYPE.get(dtype));
    }

    /** The name of a removed id ({@code Q4_2}), for error messages. */
    static Optional<String> removedName(long id) {
        return id < 0 || id > Integer.MAX_VALUE ? Optional.empty() : Optional.ofNullable(REMOVED.get((int) id));
    }

    /** The {@code ggml_type} value. */
    public int ggmlId() {
        return ggmlId;
    }

    /** Elements per block ({@code blck_size}); 1 for scalar types. */
    public int blockElements() {
        return blockElements;
    }

    /** Bytes per block ({@code type_size}). */
    public int blockBytes() {
        return blockBytes;
    }

    /** The dtype tensors of this type carry. */
    public DType dtype() {
        return dtype;
    }

    public boolean isBlock() {
        return dtype.kind() == DType.Kind.QUANTIZED;
    }
}
