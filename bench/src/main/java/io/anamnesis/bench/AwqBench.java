package io.anamnesis.bench;

import io.anamnesis.api.DType;
import io.anamnesis.quant.awq.AwqKernel;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * AWQ GEMM 4-bit recovery of a 4096 (in) x 11008 (out) layer, group 128, to BF16
 * [11008, 4096], single thread, through {@link AwqKernel#dequantizeRows}. Compare with
 * {@link CopyBench} in the same run.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class AwqBench {
    static final int IN = 4096;
    static final int OUT = 11008;

    @Param({"128"})
    public int groupSize;

    private Arena arena;
    private MemorySegment qweight;
    private MemorySegment qzeros;
    private MemorySegment scales;
    private MemorySegment dest;
    private AwqKernel.Layout layout;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofConfined();
        SplittableRandom r = new SplittableRandom(42);
        int groups = IN / groupSize;
        layout = new AwqKernel.Layout(IN, OUT, groupSize, groups, DType.F16);
        ValueLayout.OfInt i32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        ValueLayout.OfShort i16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        qweight = arena.allocate((long) IN * OUT / 8 * 4, 64);
        for (long i = 0; i < qweight.byteSize(); i += 4) qweight.set(i32, i, r.nextInt());
        qzeros = arena.allocate((long) groups * OUT / 8 * 4, 64);
        for (long i = 0; i < qzeros.byteSize(); i += 4) qzeros.set(i32, i, r.nextInt());
        scales = arena.allocate((long) groups * OUT * 2, 64);
        for (long i = 0; i < scales.byteSize(); i += 2) scales.set(i16, i, Float.floatToFloat16((float) r.nextDouble(-0.02, 0.02)));
        dest = arena.allocate((long) IN * OUT * 2, 64);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public MemorySegment dequantizeToBf16() {
        AwqKernel.dequantizeRows(qweight, qzeros, scales, layout, 0, OUT, DType.BF16, dest);
        return dest;
    }

    /** The scalar reference kernel. */
    @Benchmark
    public MemorySegment scalarToBf16() {
        AwqKernel.dequantizeRowsScalar(qweight, qzeros, scales, layout, 0, OUT, DType.BF16, dest);
        return dest;
    }

    /** What amn runs without the Vector API: the lookup kernel where it applies. */
    @Benchmark
    public MemorySegment noVectorToBf16() {
        AwqKernel.dequantizeRowsNoVector(qweight, qzeros, scales, layout, 0, OUT, DType.BF16, dest);
        return dest;
    }
}
