package io.anamnesis.quant.gguf.llama;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/**
 * What {@code amn forget --to} asked for: a llama-quantize file type, whose per-tensor type
 * mix llama.cpp decides, or one ggml type for every eligible tensor.
 */
public sealed interface Target {

    /** The {@code llama_ftype} written to {@code general.file_type}. */
    int fileTypeId();

    /** One line for the summary: {@code Q4_K_M}, {@code ggml type iq2_s}. */
    String describe();

    /**
     * A llama-quantize file type: {@code llama_tensor_get_type} chooses each tensor's type, and
     * the imatrix requirement is llama.cpp's ({@code tensor_requires_imatrix}).
     */
    record Mix(FileType fileType) implements Target {
        @Override
        public int fileTypeId() {
            return fileType.id();
        }

        @Override
        public String describe() {
            return fileType.llamaName();
        }
    }

    /**
     * One ggml type for every tensor llama.cpp would quantize (with its fallback where a row
     * does not fit the block), as {@code ggml_quantize_chunk} makes it: the imatrix
     * requirement is ggml's ({@code ggml_quantize_requires_imatrix}); llama.cpp's stricter
     * one only warns.
     */
    record Exact(GgmlType type) implements Target {
        /** ggml_quantize_requires_imatrix at ca01960e6a (IQ1_M is commented out there). */
        static final Set<GgmlType> GGML_NEEDS_IMATRIX = EnumSet.of(GgmlType.IQ2_XXS, GgmlType.IQ2_XS, GgmlType.IQ1_S);

        /**
         * The file type llama.cpp's model loader guesses for a file made mostly of this type
         * (its {@code type_max} table); MXFP4, which the table lacks, gets the one file type
         * made of it, MXFP4_MOE (38); Q2_0 the prismml-eng fork's MOSTLY_Q2_0 (41).
         */
        @Override
        public int fileTypeId() {
            return switch (type) {
                case F32 -> 0;
                case F16 -> 1;
                case Q4_0 -> 2;
                case Q4_1 -> 3;
                case Q8_0 -> 7;
                case Q5_0 -> 8;
                case Q5_1 -> 9;
                case Q2_K -> 10;
                case Q3_K -> 12;
                case Q4_K -> 15;
                case Q5_K -> 17;
                case Q6_K -> 18;
                case IQ2_XXS -> 19;
                case IQ2_XS -> 20;
                case IQ3_XXS -> 23;
                case IQ1_S -> 24;
                case IQ4_NL -> 25;
                case IQ3_S -> 26;
                case IQ2_S -> 28;
                case IQ4_XS -> 30;
                case IQ1_M -> 31;
                case BF16 -> 32;
                case TQ1_0 -> 36;
                case TQ2_0 -> 37;
                case MXFP4 -> 38;
                case NVFP4 -> 39;
                case Q1_0 -> 40;
                case Q2_0 -> 41;
            };
        }

        @Override
        public String describe() {
            return "ggml type " + type.name().toLowerCase(Locale.ROOT);
        }
    }
}
