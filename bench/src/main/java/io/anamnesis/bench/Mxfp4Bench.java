package io.anamnesis.bench;

import io.anamnesis.api.DType;
import io.anamnesis.quant.mxfp4.Mxfp4Kernels;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * gpt-oss MXFP4 experts to BF16, single thread: 4 experts of [2752, 4096] blocks (45.1 M
 * elements, the [4096, 11008] size of the other benchmarks) through
 * {@link Mxfp4Kernels#transposed} (transformers' [E, in, out] layout, the one amn writes) and
 * {@link Mxfp4Kernels#blocks} (the stored layout), the tables made in the measured call.
 * The {@code Vector} methods run the Vector API kernel of the transposed layout (they need
 * {@code --add-modules jdk.incubator.vector} and 512-bit vectors); the {@code F32} ones
 * write twice the bytes.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED"})
public class Mxfp4Bench {
    static final int EXPERTS = 4;
    static final int ROWS = 2752;
    static final int GROUPS = 4096 / 32;
    static final long BLOCKS = (long) EXPERTS * ROWS * GROUPS;

    private Arena arena;
    private MemorySegment blocks;
    private MemorySegment scales;
    private MemorySegment dest;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofConfined();
        SplittableRandom r = new SplittableRandom(42);
        blocks = arena.allocate(BLOCKS * 16, 64);
        for (long i = 0; i < blocks.byteSize(); i += 8) blocks.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        scales = arena.allocate(BLOCKS, 64);
        for (long i = 0; i < BLOCKS; i++) scales.set(ValueLayout.JAVA_BYTE, i, (byte) (115 + r.nextInt(12)));
        dest = arena.allocate(BLOCKS * 32 * 4, 64);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public MemorySegment transposedToBf16() {
        int[] table = Mxfp4Kernels.table(DType.BF16);
        Mxfp4Kernels.transposed(blocks, scales, ROWS, GROUPS, table, Mxfp4Kernels.pairs(table), false,
                0, (long) EXPERTS * GROUPS * 32, dest);
        return dest;
    }

    @Benchmark
    public MemorySegment transposedToBf16Vector() {
        return transposedWith(Mxfp4Kernels.Impl.VECTOR, DType.BF16);
    }

    @Benchmark
    public MemorySegment transposedToF32() {
        return transposedWith(Mxfp4Kernels.Impl.SCALAR, DType.F32);
    }

    @Benchmark
    public MemorySegment transposedToF32Vector() {
        return transposedWith(Mxfp4Kernels.Impl.VECTOR, DType.F32);
    }

    private MemorySegment transposedWith(Mxfp4Kernels.Impl impl, DType target) {
        Mxfp4Kernels.transposed(impl, blocks, scales, ROWS, GROUPS, Mxfp4Kernels.Tables.of(target),
                0, (long) EXPERTS * GROUPS * 32, dest);
        return dest;
    }

    @Benchmark
    public MemorySegment storedLayoutToBf16() {
        int[] table = Mxfp4Kernels.table(DType.BF16);
        Mxfp4Kernels.blocks(blocks, scales, table, Mxfp4Kernels.pairs(table), false, 0, BLOCKS, dest);
        return dest;
    }
}
