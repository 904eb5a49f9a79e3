package io.anamnesis.format.gguf;

import io.anamnesis.api.DType;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * One ggml tensor type as GGUF stores it: the id written in a tensor info ({@code ggml_type}
 * in ggml.h), ggml's name, and the block geometry of {@code ggml_type_traits}
 * ({@code blck_size} elements in {@code type_size} bytes).
 *
 * <p>Scalar types surface as the api's standard dtypes; block types as
 * {@code DType(name, QUANTIZED, blockElements, blockBytes)} with ggml's upper-case name,
 * which is what the GGUF dequantizers match on.
 *
 * @param id            the {@code ggml_type} value
 * @param name          ggml's name, upper case ({@code Q4_K}, {@code IQ2_XXS})
 * @param blockElements elements per block ({@code blck_size})
 * @param blockBytes    bytes per block ({@code type_size})
 * @param dtype         the dtype tensors of this type carry
 */
public record GgufType(int id, String name, int blockElements, int blockBytes, DType dtype) {

    private static GgufType scalar(int id, String name, DType dtype) {
        return new GgufType(id, name, 1, dtype.blockBytes(), dtype);
    }

    private static GgufType block(int id, String name, int blockElements, int blockBytes) {
        return new GgufType(id, name, blockElements, blockBytes,
                new DType(name, DType.Kind.QUANTIZED, blockElements, blockBytes));
    }

    /**
     * Every type ggml defines, in id order. Sizes follow the block structs of ggml-common.h
     * (QK_K = 256); Q8_1 is {f16 d; f16 s; int8 qs[32]} = 36 bytes, as ggml lays it out
     * (gguf-py's table still says 40).
     */
    public static final List<GgufType> ALL = List.of(
            scalar(0, "F32", DType.F32),
            scalar(1, "F16", DType.F16),
            block(2, "Q4_0", 32, 18),
            block(3, "Q4_1", 32, 20),
            block(6, "Q5_0", 32, 22),
            block(7, "Q5_1", 32, 24),
            block(8, "Q8_0", 32, 34),
            block(9, "Q8_1", 32, 36),
            block(10, "Q2_K", 256, 84),
            block(11, "Q3_K", 256, 110),
            block(12, "Q4_K", 256, 144),
            block(13, "Q5_K", 256, 176),
            block(14, "Q6_K", 256, 210),
            block(15, "Q8_K", 256, 292),
            block(16, "IQ2_XXS", 256, 66),
            block(17, "IQ2_XS", 256, 74),
            block(18, "IQ3_XXS", 256, 98),
            block(19, "IQ1_S", 256, 50),
            block(20, "IQ4_NL", 32, 18),
            block(21, "IQ3_S", 256, 110),
            block(22, "IQ2_S", 256, 82),
            block(23, "IQ4_XS", 256, 136),
            scalar(24, "I8", DType.I8),
            scalar(25, "I16", DType.I16),
            scalar(26, "I32", DType.I32),
            scalar(27, "I64", DType.I64),
            scalar(28, "F64", DType.F64),
            block(29, "IQ1_M", 256, 56),
            scalar(30, "BF16", DType.BF16),
            block(34, "TQ1_0", 256, 54),
            block(35, "TQ2_0", 256, 66),
            block(39, "MXFP4", 32, 17),
            block(40, "NVFP4", 64, 36),
            block(41, "Q1_0", 128, 18),
            block(42, "Q2_0", 64, 18));

    /**
     * Ids ggml once used and has since removed; files that still carry them get a message
     * saying so instead of "unknown".
     */
    private static final Map<Integer, String> REMOVED = Map.of(
            4, "Q4_2", 5, "Q4_3",
            31, "Q4_0_4_4", 32, "Q4_0_4_8", 33, "Q4_0_8_8",
            36, "IQ4_NL_4_4", 37, "IQ4_NL_4_8", 38, "IQ4_NL_8_8");

    private static final Map<Integer, GgufType> BY_ID = ALL.stream()
            .collect(Collectors.toUnmodifiableMap(GgufType::id, Function.identity()));
    private static final Map<String, GgufType> BY_NAME = ALL.stream()
            .collect(Collectors.toUnmodifiableMap(GgufType::name, Function.identity()));
    private static final Map<DType, GgufType> BY_DTYPE = ALL.stream()
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

    public boolean isBlock() {
        return dtype.kind() == DType.Kind.QUANTIZED;
    }
}
