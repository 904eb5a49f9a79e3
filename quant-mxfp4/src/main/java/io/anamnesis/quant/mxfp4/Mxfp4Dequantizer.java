package io.anamnesis.quant.mxfp4;

import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.Role;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.config.QuantizationConfig;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.spi.RecoveryKernel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Recovers gpt-oss's MXFP4 experts ({@code quant_method: mxfp4}):
 *
 * <ul>
 * <li>{@code <p>_blocks} (U8 {@code [E, rows, G, 16]}) and {@code <p>_scales} (U8
 *     {@code [E, rows, G]}), the Hugging Face checkpoint, become {@code <p>}
 *     {@code [E, G*32, rows]}: the tensor transformers' {@code convert_moe_packed_tensors}
 *     returns, transposed to its {@code GptOssExperts} layout;</li>
 * <li>{@code <p>.blocks} / {@code <p>.scales} (gpt-oss's own {@code original/} checkpoint,
 *     any number of leading dimensions) become {@code <p>} {@code [..., rows, G*32]}, as
 *     gpt-oss's {@code Checkpoint._get_mxfp4_tensor} returns them, untransposed.</li>
 * </ul>
 *
 * <p>Biases, the router and everything else pass through. A checkpoint whose quantization
 * config names another method is left alone.
 */
public final class Mxfp4Dequantizer implements Dequantizer {
    static final String SCHEME = "mxfp4";

    @Override
    public String scheme() {
        return SCHEME;
    }

    @Override
    public String description() {
        return "gpt-oss MXFP4 experts (_blocks FP4 E2M1 + _scales E8M0 per 32), transposed as transformers loads them";
    }

    /** The two naming conventions: suffix of the blocks, of the scales, and whether the output is transposed. */
    private record Naming(String blocks, String scales, boolean transposed) {
    }

    private static final List<Naming> NAMINGS = List.of(
            new Naming("_blocks", "_scales", true),
            new Naming(".blocks", ".scales", false));

    @Override
    public List<Recovery> claim(ClaimContext context) {
        TensorArchive archive = context.archive();
        Map<String, TensorEntry> byName = new HashMap<>();
        for (TensorEntry e : archive.tensors()) byName.putIfAbsent(e.name(), e);
        List<Recovery> out = new ArrayList<>();
        boolean configChecked = false;
        for (TensorEntry blocks : archive.tensors()) {
            for (Naming n : NAMINGS) {
                if (!blocks.name().endsWith(n.blocks())) continue;
                String prefix = blocks.name().substring(0, blocks.name().length() - n.blocks().length());
                TensorEntry scales = byName.get(prefix + n.scales());
                if (scales == null || !blocks.dtype().equals(DType.U8)) continue;
                if (!configChecked) {
                    String method = QuantizationConfig.find(context).flatMap(QuantizationConfig::quantMethod).orElse("");
                    if (!method.isEmpty() && !method.equals(SCHEME)) return List.of();
                    configChecked = true;
                }
                out.add(recovery(prefix, blocks, scales, n.transposed()));
            }
        }
        return out;
    }

    private static Recovery recovery(String name, TensorEntry blocks, TensorEntry scales, boolean transposed) {
        Shape b = blocks.shape();
        int rank = b.rank();
        if (rank < 2 || b.dim(rank - 1) != Mxfp4Kernels.BLOCK_BYTES) {
            throw MalformedFileException.inTensor(blocks.name(), "has shape " + b + "; MXFP4 blocks are [..., groups, 16]");
        }
        long[] lead = new long[rank - 1];
        for (int i = 0; i < rank - 1; i++) lead[i] = b.dim(i);
        if (!scales.dtype().equals(DType.U8) && !scales.dtype().equals(DType.F8_E8M0)) {
            throw UnsupportedFeatureException.inTensor(scales.name(), "MXFP4 scales in " + scales.dtype() + " (U8 E8M0 are)");
        }
        if (!scales.shape().equals(Shape.of(lead))) {
            throw MalformedFileException.inTensor(scales.name(), "has shape " + scales.shape() + "; blocks " + b
                    + " need one scale each: " + Shape.of(lead));
        }
        long groups = b.dim(rank - 2);
        long cols = Math.multiplyExact(groups, (long) Mxfp4Kernels.BLOCK);
        Shape output;
        String layout;
        if (transposed) {
            if (rank != 4) {
                throw MalformedFileException.inTensor(blocks.name(), "has shape " + b
                        + "; gpt-oss expert blocks are [experts, rows, groups, 16]");
            }
            if (b.dim(1) > Integer.MAX_VALUE || groups > Integer.MAX_VALUE / Mxfp4Kernels.BLOCK) {
                throw LimitExceededException.inTensor(blocks.name(), "shape " + b + " is larger than supported");
            }
            output = Shape.of(b.dim(0), cols, b.dim(1));
            layout = "[experts, in, out] as transformers loads them";
        } else {
            long[] dims = new long[rank - 1];
            System.arraycopy(lead, 0, dims, 0, rank - 2);
            dims[rank - 2] = cols;
            output = Shape.of(dims);
            layout = "as stored";
        }
        output.elementCount(); // overflows are refused here, before anything is planned
        Map<String, Role> inputs = new LinkedHashMap<>();
        inputs.put(blocks.name(), Role.QUANTIZED);
        inputs.put(scales.name(), Role.SCALE);
        return new Recovery(name, output, SCHEME, "MXFP4 (FP4 E2M1, E8M0 scales per 32), " + layout, inputs,
                new Kernel(blocks, scales, transposed, transposed ? (int) b.dim(1) : 0, (int) Math.min(Integer.MAX_VALUE, groups)));
    }

    /**
     * @param rows   source rows per expert (transposed layout: the output row length)
     * @param groups blocks per source row
     */
    record Kernel(TensorEntry blocks, TensorEntry scales, boolean transposed, int rows, int groups) implements RecoveryKernel {
        @Override
        public long granule() {
            // an output row: the transposed kernel fills whole rows; otherwise one block
            return transposed ? Math.max(1, rows) : Mxfp4Kernels.BLOCK;
        }

        @Override
        public ChunkFiller open(TensorArchive archive, Arena arena, DType target) {
            if (!target.equals(DType.BF16) && !target.equals(DType.F16) && !target.equals(DType.F32)) {
                throw UnsupportedFeatureException.inTensor(blocks.name(), "MXFP4 recovers to BF16, F16 or F32, not " + target);
            }
            MemorySegment b = mapped(archive, blocks, arena);
            MemorySegment s = mapped(archive, scales, arena);
            Mxfp4Kernels.Tables tables = Mxfp4Kernels.Tables.of(target);
            if (transposed) {
                if (rows == 0) return (first, count, dest) -> { };
                // the implementation is asked per chunk: auto switches to the vector kernel once it has won its race
                return (first, count, dest) -> Mxfp4Kernels.transposed(Mxfp4Kernels.best(), b, s, rows, groups, tables,
                        first / rows, count / rows, dest);
            }
            return (first, count, dest) -> Mxfp4Kernels.blocks(b, s, tables.table(), tables.pairs(), tables.wide(),
                    first / Mxfp4Kernels.BLOCK, count / Mxfp4Kernels.BLOCK, dest);
        }

        private static MemorySegment mapped(TensorArchive archive, TensorEntry e, Arena arena) {
            MemorySegment m = archive.data(e, arena);
            if (m.byteSize() != e.byteSize()) {
                throw MalformedFileException.inTensor(e.name(), "holds " + m.byteSize() + " bytes, its dtype and shape need "
                        + e.byteSize());
            }
            return m;
        }
    }
}
