package io.anamnesis.bench;

import io.anamnesis.api.DType;
import io.anamnesis.quant.gptq.GptqKernel;
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
 * GPTQ recovery of a 4096 (in) x 11008 (out) layer to BF16 [11008, 4096], single thread:
 * the whole tensor through {@link GptqKernel#dequantizeRows}. Compare with {@link CopyBench}
 * (copying the same 90 MB of output) in the same run.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class GptqBench {
    static final int IN = 4096;
    static final int OUT = 11008;

    @Param({"4", "8"})
    public int bits;

    @Param({"128"})
    public int groupSize;

    @Param({"false"})
    public boolean actOrder;

    private Arena arena;
    private MemorySegment qweight;
    private MemorySegment qzeros;
    private MemorySegment scales;
    private MemorySegment dest;
    private int[] groupOf;
    private GptqKernel.Layout layout;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofConfined();
        SplittableRandom r = new SplittableRandom(42);
        int groups = IN / groupSize;
        int zeroWords = (OUT * bits + 31) / 32;
        layout = new GptqKernel.Layout(bits, IN, OUT, groups, zeroWords, 1, DType.F16);
        ValueLayout.OfInt i32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        ValueLayout.OfShort i16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        qweight = arena.allocate(layout.packedRows() * OUT * 4, 64);
        for (long i = 0; i < qweight.byteSize(); i += 4) qweight.set(i32, i, r.nextInt());
        qzeros = arena.allocate((long) groups * zeroWords * 4, 64);
        for (long i = 0; i < qzeros.byteSize(); i += 4) qzeros.set(i32, i, r.nextInt());
        scales = arena.allocate((long) groups * OUT * 2, 64);
        for (long i = 0; i < scales.byteSize(); i += 2) scales.set(i16, i, Float.floatToFloat16((float) r.nextDouble(-0.02, 0.02)));
        groupOf = new int[IN];
        for (int i = 0; i < IN; i++) groupOf[i] = i / groupSize;
        if (actOrder) {
            for (int i = IN - 1; i > 0; i--) {
                int j = r.nextInt(i + 1);
                int t = groupOf[i];
                groupOf[i] = groupOf[j];
                groupOf[j] = t;
            }
        }
        dest = arena.allocate((long) IN * OUT * 2, 64);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public MemorySegment dequantizeToBf16() {
        GptqKernel.dequantizeRows(qweight, qzeros, scales, groupOf, layout, 0, OUT, DType.BF16, dest);
        return dest;
    }

    /** The scalar reference kernel (every layout). */
    @Benchmark
    public MemorySegment scalarToBf16() {
        GptqKernel.dequantizeRowsScalar(qweight, qzeros, scales, groupOf, layout, 0, OUT, DType.BF16, dest);
        return dest;
    }

    /** What amn runs without the Vector API: the lookup kernel for 2/4 bits without act-order, else scalar. */
    @Benchmark
    public MemorySegment noVectorToBf16() {
        GptqKernel.dequantizeRowsNoVector(qweight, qzeros, scales, groupOf, layout, 0, OUT, DType.BF16, dest);
        return dest;
    }
}
