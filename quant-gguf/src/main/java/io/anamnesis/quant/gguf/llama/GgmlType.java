package io.anamnesis.quant.gguf.llama;

import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The ggml tensor types a quantized GGUF file is made of: the three float types and every
 * block type ggml can quantize to, with the facts the type choice needs (ggml.h ids,
 * {@code ggml_type_name} spellings, {@code blck_size} and {@code type_size}). The constant
 * names are ggml's upper-case names, which are also the names of the matching
 * {@link io.anamnesis.quant.gguf.GgufBlockType} and of the api's dtypes.
 */
public enum GgmlType {
    F32(0, "f32", 1, 4),
    F16(1, "f16", 1, 2),
    Q4_0(2, "q4_0", 32, 18),
    Q4_1(3, "q4_1", 32, 20),
    Q5_0(6, "q5_0", 32, 22),
    Q5_1(7, "q5_1", 32, 24),
    Q8_0(8, "q8_0", 32, 34),
    Q2_K(10, "q2_K", 256, 84),
    Q3_K(11, "q3_K", 256, 110),
    Q4_K(12, "q4_K", 256, 144),
    Q5_K(13, "q5_K", 256, 176),
    Q6_K(14, "q6_K", 256, 210),
    IQ2_XXS(16, "iq2_xxs", 256, 66),
    IQ2_XS(17, "iq2_xs", 256, 74),
    IQ3_XXS(18, "iq3_xxs", 256, 98),
    IQ1_S(19, "iq1_s", 256, 50),
    IQ4_NL(20, "iq4_nl", 32, 18),
    IQ3_S(21, "iq3_s", 256, 110),
    IQ2_S(22, "iq2_s", 256, 82),
    IQ4_XS(23, "iq4_xs", 256, 136),
    IQ1_M(29, "iq1_m", 256, 56),
    BF16(30, "bf16", 1, 2),
    TQ1_0(34, "tq1_0", 256, 54),
    TQ2_0(35, "tq2_0", 256, 66),
    MXFP4(39, "mxfp4", 32, 17),
    NVFP4(40, "nvfp4", 64, 36),
    Q1_0(41, "q1_0", 128, 18),
    /** Not in upstream ggml at ca01960e6a: the prismml-eng fork's 2-bit type, which the corpus' ggml has. */
    Q2_0(42, "q2_0", 64, 18);

    private final int id;
    private final String ggmlName;
    private final int blockElements;
    private final int blockBytes;

    GgmlType(int id, String ggmlName, int blockElements, int blockBytes) {
        this.id = id;
        this.ggmlName = ggmlName;
        this.blockElements = blockElements;
        this.blockBytes = blockBytes;
    }

    private static final Map<String, GgmlType> BY_NAME = Arrays.stream(values())
            .collect(Collectors.toUnmodifiableMap(GgmlType::name, Function.identity()));

    /** The type of an upper-case ggml or dtype name ({@code Q4_K}, {@code F16}), if it is one of these. */
    public static Optional<GgmlType> byName(String name) {
        return Optional.ofNullable(BY_NAME.get(name.toUpperCase(Locale.ROOT)));
    }

    /** The {@code ggml_type} id. */
    public int id() {
        return id;
    }

    /** {@code ggml_type_name}: {@code q4_K}, {@code iq2_xxs}, {@code f32}. */
    public String ggmlName() {
        return ggmlName;
    }

    public int blockElements() {
        return blockElements;
    }

    public int blockBytes() {
        return blockBytes;
    }

    /** {@code ggml_is_quantized}: a block type, as opposed to F32, F16 and BF16. */
    public boolean isQuantized() {
        return blockElements > 1;
    }

    /** Whether rows of {@code rowLength} elements are whole blocks of this type. */
    public boolean fits(long rowLength) {
        return rowLength % blockElements == 0;
    }
}
