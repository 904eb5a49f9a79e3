package io.anamnesis.quant.gguf;

import io.anamnesis.api.DType;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Vector API path must give the same bytes as the scalar path, for every type and
 * output dtype, on random blocks (random scales include inf/NaN-producing f16 codes,
 * negative scales and zeros) at an offset that is not a multiple of the batch.
 */
class GgufVectorKernelsTest {

    @ParameterizedTest
    @EnumSource(GgufBlockType.class)
    void vectorPathIsBitIdenticalToScalar(GgufBlockType type) {
        Assumptions.assumeTrue(GgufKernel.VECTOR, "Vector API not available on this JVM/CPU");
        int blocks = 2 * GgufKernel.BATCH_ELEMENTS / type.blockElements() + 7;
        byte[] raw = new byte[blocks * type.blockBytes()];
        new SplittableRandom(type.ordinal() * 7919L + 1).nextBytes(raw);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(raw.length + 1).asSlice(1); // unaligned on purpose
            MemorySegment.copy(MemorySegment.ofArray(raw), 0, src, 0, raw.length);
            long first = 3L * type.blockElements();
            long count = (long) (blocks - 3) * type.blockElements();
            for (DType target : new DType[] {DType.BF16, DType.F32, DType.F16}) {
                MemorySegment scalar = arena.allocate(target.byteSize(count));
                MemorySegment vector = arena.allocate(target.byteSize(count));
                GgufKernel.decode(type, src, first, count, target, scalar, false);
                GgufKernel.decode(type, src, first, count, target, vector, true);
                long mismatch = scalar.mismatch(vector);
                assertThat(mismatch).as("%s to %s: first differing byte (scalar %s, vector %s)", type, target,
                        mismatch < 0 ? "" : scalar.get(ValueLayout.JAVA_BYTE, mismatch),
                        mismatch < 0 ? "" : vector.get(ValueLayout.JAVA_BYTE, mismatch)).isEqualTo(-1);
            }
        }
    }
}
