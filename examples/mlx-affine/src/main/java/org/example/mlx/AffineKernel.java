package org.example.mlx;

import io.anamnesis.api.DType;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.numeric.FloatTarget;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.numeric.PackedInts;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.RecoveryKernel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The arithmetic of one MLX affine layer: {@code w = scales * q + biases}, in the order and
 * precision {@code mx.dequantize} computes it on the CPU, where it is two element-wise ops in
 * the scales' dtype T: {@code scales * q} rounded to T, then {@code + biases} rounded to T.
 * Here both run in F32 and each result is rounded to T by round-to-nearest-even: for an F16
 * or BF16 T the product of a scale and a value of at most 8 bits is exact in F32, and a sum
 * rounded first to F32 and then to T is the sum rounded to T (F32 has more than twice T's
 * precision plus two bits). The value, exact in T, is then written in the requested dtype:
 * F32 as is, BF16 or F16 rounded to nearest even.
 *
 * <p>Element {@code e} of the output is row {@code e / in}, column {@code e % in}; its
 * {@code q} is value {@code column} of the row's bit stream ({@link PackedInts}), its scale
 * and bias those of group {@code column / group}. Any element can be made alone, so the
 * kernel's granule is one element and chunks may fall anywhere.
 */
record AffineKernel(TensorEntry weight, TensorEntry scales, TensorEntry biases, int bits, int group, long in,
                    long wordsPerRow) implements RecoveryKernel {

    @Override
    public long granule() {
        return 1;
    }

    @Override
    public ChunkFiller open(TensorArchive archive, Arena arena, DType target) {
        MemorySegment q = archive.data(weight, arena);
        MemorySegment s = archive.data(scales, arena);
        MemorySegment b = archive.data(biases, arena);
        DType scaleType = scales.dtype();
        FloatTarget out = FloatTarget.of(target);
        long groupsPerRow = in / group;
        return (first, count, dest) -> {
            for (long i = 0; i < count; i++) {
                long e = first + i;
                long row = e / in;
                long column = e % in;
                int value = PackedInts.get(q, row * wordsPerRow * 4, column, bits);
                long g = row * groupsPerRow + column / group;
                float scale = widen(s, g, scaleType);
                float bias = widen(b, g, scaleType);
                float w = round(round(scale * value, scaleType) + bias, scaleType);
                int outBits = out.bits(w);
                if (out.bytes() == 4) dest.set(LittleEndian.I32, i * 4, outBits);
                else dest.set(LittleEndian.I16, i * 2, (short) outBits);
            }
        };
    }

    /** Element {@code i} of an F16, BF16 or F32 tensor, exactly. */
    static float widen(MemorySegment t, long i, DType type) {
        if (type.equals(DType.F32)) return t.get(LittleEndian.F32, i * 4);
        short bits = t.get(LittleEndian.I16, i * 2);
        return type.equals(DType.F16) ? Floats.f16ToF32(bits) : Floats.bf16ToF32(bits);
    }

    /** {@code v} rounded to the nearest value of {@code type} (ties to even), as an F32. */
    static float round(float v, DType type) {
        if (type.equals(DType.F32)) return v;
        return type.equals(DType.F16) ? Floats.f16ToF32(Floats.f32ToF16(v)) : Floats.bf16ToF32(Floats.f32ToBf16(v));
    }
}
