package io.anamnesis.quant.gguf;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.Role;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.spi.Recovery;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Recovers every ggml block type (Q4_0 ... Q6_K, Q8_K, the IQ family, TQ1_0/TQ2_0, MXFP4,
 * NVFP4, Q1_0, Q2_0) to F32 bit-identical with ggml's {@code dequantize_row_*}, and to
 * BF16/F16 by round-to-nearest-even of that F32.
 *
 * <p>A GGUF block tensor is self-contained: one tensor in, one tensor out, same name and
 * row-major shape. Tensors whose dtype is {@link DType.Kind#QUANTIZED} with a ggml name
 * this module does not know are left unclaimed, so the planner reports them.
 */
public final class GgufDequantizer implements Dequantizer {

    @Override
    public String scheme() {
        return "gguf";
    }

    @Override
    public String description() {
        return "GGUF/ggml block types (Q4_0..Q8_K, IQ1_S..IQ4_XS, TQ1_0, TQ2_0, MXFP4, NVFP4, Q1_0, Q2_0), bit-exact with ggml";
    }

    @Override
    public List<Recovery> claim(ClaimContext context) {
        List<Recovery> out = new ArrayList<>();
        for (TensorEntry e : context.archive().tensors()) {
            recoveryOf(e).ifPresent(out::add);
        }
        return out;
    }

    /**
     * The recovery of one tensor, when its dtype is a block type this module knows.
     *
     * @throws MalformedFileException when the dtype's geometry disagrees with ggml's for
     *         that name, or a row is not a whole number of blocks
     */
    static Optional<Recovery> recoveryOf(TensorEntry e) {
        DType dt = e.dtype();
        if (dt.kind() != DType.Kind.QUANTIZED) return Optional.empty();
        Optional<GgufBlockType> known = GgufBlockType.byName(dt.name());
        if (known.isEmpty()) return Optional.empty();
        GgufBlockType type = known.get();
        if (dt.blockElements() != type.blockElements() || dt.blockBytes() != type.blockBytes()) {
            throw MalformedFileException.inTensor(e.name(), "dtype " + dt.name() + " declares blocks of "
                    + dt.blockElements() + " elements in " + dt.blockBytes() + " bytes; ggml's "
                    + type.name() + " is " + type.blockElements() + " in " + type.blockBytes());
        }
        long rowLength = e.shape().lastDim();
        if (rowLength % type.blockElements() != 0) {
            throw MalformedFileException.inTensor(e.name(), "row length " + rowLength
                    + " is not a multiple of the " + type.name() + " block of " + type.blockElements());
        }
        long elements;
        try {
            elements = e.elementCount();
        } catch (ArithmeticException overflow) {
            throw MalformedFileException.inTensor(e.name(), "shape " + e.shape() + " overflows a 64-bit element count");
        }
        return Optional.of(new Recovery(e.name(), e.shape(), "gguf", "GGUF " + type.name(),
                Map.of(e.name(), Role.QUANTIZED), new GgufKernel(e.name(), type, elements)));
    }
}
