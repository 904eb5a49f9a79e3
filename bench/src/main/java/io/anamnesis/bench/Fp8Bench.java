package io.anamnesis.bench;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.quant.fp8.Fp8Format;
import io.anamnesis.quant.fp8.Fp8Kernels;
import io.anamnesis.quant.fp8.Fp8Kernels.Impl;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
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
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * FP8 (E4M3, E5M2 and the FNUZ variants, {@code format}) to BF16 at 4096 x 11008, single
 * thread, through the same
 * {@link Fp8Kernels#dequantizeGrid} the recovery uses: per-tensor (one F32 scale) and
 * fine-grained (128 x 128 blocks, BF16 scales widened once, as the dequantizer does), scalar
 * and Vector API. Scores are elements per second ({@code ops/s} with one op per element).
 * Warm-up iterations are 2 s: the first invocation runs interpreted for seconds. Run with
 * {@code CopyBench} in the same invocation for the ceiling:
 * {@code java --add-modules jdk.incubator.vector -jar benchmarks.jar 'Fp8Bench|CopyBench'}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class Fp8Bench {
    static final int ROWS = 4096;
    static final int COLS = 11008;
    static final int ELEMENTS = ROWS * COLS;

    @Param({"E4M3", "E5M2", "E4M3FNUZ", "E5M2FNUZ"})
    public String format;

    private Fp8Format fp8;
    private Arena arena;
    private MemorySegment codes;
    private MemorySegment out;
    private float[] tensorScale;
    private float[] blockScales;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofConfined();
        codes = arena.allocate(ELEMENTS, 64);
        out = arena.allocate(2L * ELEMENTS, 64);
        SplittableRandom random = new SplittableRandom(42);
        fp8 = Fp8Format.valueOf(format);
        int[] finite = new int[256];
        int n = 0;
        for (int c = 0; c < 256; c++) if (!fp8.number().isSpecial(c)) finite[n++] = c;
        for (long i = 0; i < ELEMENTS; i++) {
            // every code but the NaNs and infinities, as quantized weights hold
            codes.set(ValueLayout.JAVA_BYTE, i, (byte) finite[random.nextInt(n)]);
        }
        tensorScale = new float[]{0x1p-8f * 1.37f};
        int blocks = ((ROWS + 127) / 128) * ((COLS + 127) / 128);
        blockScales = new float[blocks];
        for (int i = 0; i < blocks; i++) {
            // BF16 scales as block-FP8 checkpoints store them, widened to F32
            blockScales[i] = Floats.bf16ToF32(Floats.f32ToBf16((float) (random.nextDouble() * 1e-3 + 1e-5)));
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    private MemorySegment run(Impl impl, float[] scales, long block) {
        Fp8Kernels.dequantizeGrid(impl, fp8, DType.BF16, codes, COLS, scales, block, block, 0, ELEMENTS, out);
        return out;
    }

    @Benchmark
    @OperationsPerInvocation(ELEMENTS)
    public MemorySegment perTensorScalar() {
        return run(Impl.SCALAR, tensorScale, Long.MAX_VALUE);
    }

    @Benchmark
    @OperationsPerInvocation(ELEMENTS)
    public MemorySegment perTensorVector() {
        return run(Impl.VECTOR, tensorScale, Long.MAX_VALUE);
    }

    @Benchmark
    @OperationsPerInvocation(ELEMENTS)
    public MemorySegment blockScalar() {
        return run(Impl.SCALAR, blockScales, 128);
    }

    @Benchmark
    @OperationsPerInvocation(ELEMENTS)
    public MemorySegment blockVector() {
        return run(Impl.VECTOR, blockScales, 128);
    }

    @Benchmark
    @OperationsPerInvocation(ELEMENTS)
    public MemorySegment perTensorTable() {
        return run(Impl.TABLE, tensorScale, Long.MAX_VALUE);
    }

    @Benchmark
    @OperationsPerInvocation(ELEMENTS)
    public MemorySegment blockTable() {
        return run(Impl.TABLE, blockScales, 128);
    }
}
