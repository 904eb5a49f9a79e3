package io.anamnesis.bench;

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
import java.util.concurrent.TimeUnit;

/**
 * The ceiling every recovery kernel is measured against: {@code MemorySegment.copy} of the
 * output bytes (4096 x 11008 BF16 = 90 MB), single thread. A kernel cannot beat writing its
 * output; the ratio to this says how much of the remaining time is arithmetic.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class CopyBench {
    /** Elements of the benchmark matrix: 4096 x 11008, the peer's own benchmark shape. */
    public static final long ELEMENTS = 4096L * 11008L;

    @Param({"2"})
    public int outputBytesPerElement;

    private Arena arena;
    private MemorySegment src;
    private MemorySegment dst;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofConfined();
        src = arena.allocate(ELEMENTS * outputBytesPerElement, 64);
        dst = arena.allocate(ELEMENTS * outputBytesPerElement, 64);
        for (long i = 0; i < src.byteSize(); i += 4096) src.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) i);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public MemorySegment copyOutputBytes() {
        MemorySegment.copy(src, 0, dst, 0, src.byteSize());
        return dst;
    }
}
