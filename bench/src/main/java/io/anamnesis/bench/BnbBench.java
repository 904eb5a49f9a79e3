package io.anamnesis.bench;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.quant.bnb.FourBit;
import io.anamnesis.quant.bnb.Int8Rows;
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
 * bitsandbytes kernels on the 4096 x 11008 benchmark matrix to BF16, single thread, one
 * fill of the whole tensor per invocation: NF4 and FP4 with block 64, NF4 double-quant
 * (nested 256) and LLM.int8(). Compare with {@link CopyBench} run in the same session. The
 * {@code *Scalar} variants force the scalar fallback; the others take the Vector API path
 * when {@code jdk.incubator.vector} is resolved and the CPU has 512-bit vectors.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class BnbBench {
    static final long ROWS = 4096;
    static final long COLS = 11008;
    static final long N = ROWS * COLS;
    static final int BLOCK = 64;
    static final long BLOCKS = N / BLOCK;

    /** NF4 code book (published constants). */
    static final float[] NF4 = {
            -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
            -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
            0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
            0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};

    private Arena arena;
    private MemorySegment packed;
    private MemorySegment int8;
    private MemorySegment scb;
    private MemorySegment dest;
    private FourBit.Absmax plain;
    private FourBit.Absmax nested;
    private float[] nf4;
    private float[] fp4;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofConfined();
        SplittableRandom rnd = new SplittableRandom(42);
        packed = arena.allocate(N / 2, 64);
        int8 = arena.allocate(N, 64);
        for (long i = 0; i < N / 2; i++) packed.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        for (long i = 0; i < N; i++) int8.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        MemorySegment absmax = arena.allocate(BLOCKS * 4, 64);
        MemorySegment codes = arena.allocate(BLOCKS, 64);
        for (long b = 0; b < BLOCKS; b++) {
            absmax.set(LittleEndian.F32, 4 * b, (float) (0.01 + rnd.nextDouble() * 0.1));
            codes.set(ValueLayout.JAVA_BYTE, b, (byte) rnd.nextInt());
        }
        long nestedBlocks = (BLOCKS + 255) / 256;
        MemorySegment nestedAbsmax = arena.allocate(nestedBlocks * 4, 64);
        for (long b = 0; b < nestedBlocks; b++) nestedAbsmax.set(LittleEndian.F32, 4 * b, (float) rnd.nextDouble());
        float[] nestedMap = new float[256];
        for (int c = 0; c < 256; c++) nestedMap[c] = (c - 127.5f) / 128f;
        scb = arena.allocate(ROWS * 4, 64);
        for (long r = 0; r < ROWS; r++) scb.set(LittleEndian.F32, 4 * r, (float) (rnd.nextDouble() * 2));
        plain = new FourBit.PlainAbsmax(absmax);
        nested = new FourBit.NestedAbsmax(codes, nestedAbsmax, nestedMap, 256, 0.0505f);
        float[] fp4Map = new float[16];
        float[] m = {0f, 0.0625f, 8f, 12f, 4f, 6f, 2f, 3f};
        for (int c = 0; c < 8; c++) {
            fp4Map[c] = m[c] / 12f;
            fp4Map[c + 8] = -m[c] / 12f;
        }
        nf4 = FourBit.codeValues(NF4, false);
        fp4 = FourBit.codeValues(fp4Map, true);
        dest = arena.allocate(N * 2, 64);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public MemorySegment nf4ToBf16() {
        FourBit.decode(packed, plain, nf4, BLOCK, N, 0, N, DType.BF16, dest);
        return dest;
    }

    @Benchmark
    public MemorySegment nf4DoubleQuantToBf16() {
        FourBit.decode(packed, nested, nf4, BLOCK, N, 0, N, DType.BF16, dest);
        return dest;
    }

    @Benchmark
    public MemorySegment fp4ToBf16() {
        FourBit.decode(packed, plain, fp4, BLOCK, N, 0, N, DType.BF16, dest);
        return dest;
    }

    @Benchmark
    public MemorySegment int8ToBf16() {
        Int8Rows.decode(int8, scb, COLS, N, 0, N, DType.BF16, dest);
        return dest;
    }

    /** The scalar fallback of {@link #nf4ToBf16}, to show what the Vector API path buys. */
    @Benchmark
    public MemorySegment nf4ToBf16Scalar() {
        FourBit.decodeScalar(packed, plain, nf4, BLOCK, N, 0, N, DType.BF16, dest);
        return dest;
    }

    /** The scalar fallback of {@link #int8ToBf16}. */
    @Benchmark
    public MemorySegment int8ToBf16Scalar() {
        Int8Rows.decodeScalar(int8, scb, COLS, N, 0, N, DType.BF16, dest);
        return dest;
    }
}
