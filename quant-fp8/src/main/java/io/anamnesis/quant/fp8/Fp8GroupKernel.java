package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.RecoveryKernel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One FP8 weight and its scale: maps the codes, widens the (small) scale tensor to F32
 * once, and fills any element range. Element-wise, so the granule is one element.
 */
record Fp8GroupKernel(TensorEntry weight, TensorEntry scale, Fp8Format format, ScaleLayout layout)
        implements RecoveryKernel {

    @Override
    public long granule() {
        return 1;
    }

    @Override
    public ChunkFiller open(TensorArchive archive, Arena arena, DType target) {
        if (!target.equals(DType.BF16) && !target.equals(DType.F16) && !target.equals(DType.F32)) {
            throw UnsupportedFeatureException.inTensor(weight.name(), "FP8 recovers to BF16, F16 or F32, not " + target);
        }
        MemorySegment codes = archive.data(weight, arena);
        long n = weight.elementCount();
        if (codes.byteSize() != n) {
            throw MalformedFileException.inTensor(weight.name(), "holds " + codes.byteSize()
                    + " bytes, its shape " + weight.shape() + " needs " + n);
        }
        float[] scales = widen(archive, arena);
        long cols = weight.shape().lastDim();
        long blockRows = layout.blockRows();
        long blockCols = layout.blockCols(cols);
        // The implementation is chosen per chunk: the vector kernel takes over once it is compiled.
        return (first, count, dest) -> Fp8Kernels.dequantizeGrid(Fp8Kernels.best(), format, target, codes, cols, scales,
                blockRows, blockCols, first, count, dest);
    }

    /** The scale tensor as F32 values (widening BF16 and F16 is exact). */
    private float[] widen(TensorArchive archive, Arena arena) {
        long count = scale.elementCount();
        if (count > Integer.MAX_VALUE - 16) {
            throw LimitExceededException.inTensor(scale.name(), count + " scales are more than one array holds");
        }
        MemorySegment bytes = archive.data(scale, arena);
        DType dt = scale.dtype();
        if (bytes.byteSize() != dt.byteSize(count)) {
            throw MalformedFileException.inTensor(scale.name(), "holds " + bytes.byteSize()
                    + " bytes, its dtype and shape need " + dt.byteSize(count));
        }
        float[] out = new float[(int) count];
        for (int i = 0; i < out.length; i++) {
            if (dt.equals(DType.F32)) {
                out[i] = Float.intBitsToFloat(bytes.get(LittleEndian.I32, 4L * i));
            } else if (dt.equals(DType.BF16)) {
                out[i] = Floats.bf16ToF32(bytes.get(LittleEndian.I16, 2L * i));
            } else {
                out[i] = Floats.f16ToF32(bytes.get(LittleEndian.I16, 2L * i));
            }
        }
        return out;
    }
}
