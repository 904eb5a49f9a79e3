package io.anamnesis.quant.gguf;

import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Every ggml block type this module decodes, with its ggml type id and block geometry
 * (ggml-common.h, QK_K = 256). The name is ggml's upper-case spelling, which is how a GGUF
 * reader names the tensor's {@link io.anamnesis.api.DType}. The plain float types F32, F16
 * and BF16 close the list as blocks of one element, so that the forget path finds every type
 * ggml's {@code ggml_quantize_chunk} writes in one place; recovery leaves them to the
 * readers (they are not {@link io.anamnesis.api.DType.Kind#QUANTIZED}).
 *
 * <p>format-gguf's {@code GgufType} writes the same table the same way (name, id, elements,
 * bytes), scalar types included; neither module may depend on the other, so test-corpus
 * checks that the two agree on every id either knows.
 */
public enum GgufBlockType {
    Q4_0(2, 32, 18, GgufKernels::q4_0),
    Q4_1(3, 32, 20, GgufKernels::q4_1),
    Q5_0(6, 32, 22, GgufKernels::q5_0),
    Q5_1(7, 32, 24, GgufKernels::q5_1),
    Q8_0(8, 32, 34, GgufKernels::q8_0),
    /** ggml's own layout {f16 d; f16 s; i8 qs[32]}; gguf-py's size table still says 40 bytes. */
    Q8_1(9, 32, 36, GgufKernels::q8_1),
    Q2_K(10, 256, 84, GgufKernels::q2_k),
    Q3_K(11, 256, 110, GgufKernels::q3_k),
    Q4_K(12, 256, 144, GgufKernels::q4_k),
    Q5_K(13, 256, 176, GgufKernels::q5_k),
    Q6_K(14, 256, 210, GgufKernels::q6_k),
    Q8_K(15, 256, 292, GgufKernels::q8_k),
    IQ2_XXS(16, 256, 66, GgufKernels::iq2_xxs),
    IQ2_XS(17, 256, 74, GgufKernels::iq2_xs),
    IQ3_XXS(18, 256, 98, GgufKernels::iq3_xxs),
    IQ1_S(19, 256, 50, GgufKernels::iq1_s),
    IQ4_NL(20, 32, 18, GgufKernels::iq4_nl),
    IQ3_S(21, 256, 110, GgufKernels::iq3_s),
    IQ2_S(22, 256, 82, GgufKernels::iq2_s),
    IQ4_XS(23, 256, 136, GgufKernels::iq4_xs),
    IQ1_M(29, 256, 56, GgufKernels::iq1_m),
    TQ1_0(34, 256, 54, GgufKernels::tq1_0),
    TQ2_0(35, 256, 66, GgufKernels::tq2_0),
    MXFP4(39, 32, 17, GgufKernels::mxfp4),
    NVFP4(40, 64, 36, GgufKernels::nvfp4),
    Q1_0(41, 128, 18, GgufKernels::q1_0),
    Q2_0(42, 64, 18, GgufKernels::q2_0),
    F32(0, 1, 4, GgufKernels::f32),
    F16(1, 1, 2, GgufKernels::f16),
    BF16(30, 1, 2, GgufKernels::bf16);

    /** Decodes {@code blocks} blocks from {@code src[srcOffset...]} to F32 at {@code dst[dstOffset...]}. */
    @FunctionalInterface
    interface BlockDecoder {
        void decode(byte[] src, int srcOffset, float[] dst, int dstOffset, int blocks);
    }

    private final int ggmlId;
    private final int blockElements;
    private final int blockBytes;
    private final BlockDecoder decoder;

    GgufBlockType(int ggmlId, int blockElements, int blockBytes, BlockDecoder decoder) {
        this.ggmlId = ggmlId;
        this.blockElements = blockElements;
        this.blockBytes = blockBytes;
        this.decoder = decoder;
    }

    private static final Map<String, GgufBlockType> BY_NAME = Arrays.stream(values())
            .collect(Collectors.toUnmodifiableMap(GgufBlockType::name, Function.identity()));

    /** The type of that ggml name (exact, upper-case), if this module knows it. */
    public static Optional<GgufBlockType> byName(String name) {
        return Optional.ofNullable(BY_NAME.get(name));
    }

    public int ggmlId() {
        return ggmlId;
    }

    public int blockElements() {
        return blockElements;
    }

    public int blockBytes() {
        return blockBytes;
    }

    /**
     * Decodes whole blocks to F32, bit-identical with ggml's {@code dequantize_row_*}:
     * {@code blocks} blocks read from {@code src} at {@code srcOffset}, written to
     * {@code dst} at {@code dstOffset}.
     */
    public void decode(byte[] src, int srcOffset, float[] dst, int dstOffset, int blocks) {
        decoder.decode(src, srcOffset, dst, dstOffset, blocks);
    }
}
