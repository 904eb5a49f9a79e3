package io.anamnesis.bench;

import io.anamnesis.api.DType;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.quant.gguf.GgufBlockType;
import io.anamnesis.quant.gguf.GgufDequantizer;
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
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * GGUF block dequantization to BF16, single thread, through the real path (claim, kernel
 * open, one fill of the whole tensor) on 4096 x 11008 elements (45 M, the CopyBench shape).
 * Blocks are seeded random bytes; a block that would decode to inf/NaN (a random f16 scale
 * with an all-ones exponent) has bit 6 of its bytes cleared, so every value is finite as in
 * a real model. Compare with CopyBench in the same run: elements/s = 45_088_768 / time.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class GgufBench {
    @Param({"Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K", "Q4_1", "Q5_0", "Q5_1", "Q8_1", "Q2_K", "Q3_K", "Q8_K",
            "IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ4_NL", "IQ4_XS",
            "TQ1_0", "TQ2_0", "MXFP4", "NVFP4", "Q1_0", "Q2_0"})
    public String type;

    private Arena arena;
    private MemorySegment dest;
    private ChunkFiller filler;

    /** A one-tensor archive over a segment. */
    record OneTensor(TensorEntry entry, MemorySegment bytes) implements TensorArchive {
        @Override public String format() { return "gguf"; }
        @Override public Optional<Path> path() { return Optional.empty(); }
        @Override public Map<String, String> metadata() { return Map.of(); }
        @Override public Map<String, String> properties() { return Map.of(); }
        @Override public List<TensorEntry> tensors() { return List.of(entry); }
        @Override public MemorySegment data(TensorEntry e, Arena a) { return bytes; }
        @Override public void close() { }
    }

    @Setup(Level.Trial)
    public void setUp() {
        GgufBlockType t = GgufBlockType.byName(type).orElseThrow();
        long elements = CopyBench.ELEMENTS;
        int blocks = (int) (elements / t.blockElements());
        byte[] raw = new byte[blocks * t.blockBytes()];
        new SplittableRandom(20240611).nextBytes(raw);
        float[] check = new float[t.blockElements()];
        for (int b = 0; b < blocks; b++) {
            int off = b * t.blockBytes();
            for (int attempt = 0; attempt < 2 && !finite(t, raw, off, check); attempt++) {
                for (int i = 0; i < t.blockBytes(); i++) raw[off + i] &= (byte) 0xBF;
            }
        }
        arena = Arena.ofConfined();
        MemorySegment src = arena.allocate(raw.length, 64);
        MemorySegment.copy(MemorySegment.ofArray(raw), 0, src, 0, raw.length);
        TensorEntry entry = TensorEntry.of("blk.0.ffn_down.weight",
                new DType(t.name(), DType.Kind.QUANTIZED, t.blockElements(), t.blockBytes()),
                Shape.of(4096, 11008));
        OneTensor archive = new OneTensor(entry, src);
        Recovery r = new GgufDequantizer().claim(new ClaimContext(archive, ParseLimits.defaults())).getFirst();
        filler = r.kernel().open(archive, arena, DType.BF16);
        dest = arena.allocate(elements * 2, 64);
    }

    private static boolean finite(GgufBlockType t, byte[] raw, int off, float[] out) {
        t.decode(raw, off, out, 0, 1);
        for (float v : out) if (!Float.isFinite(v)) return false;
        return true;
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public MemorySegment dequantizeToBf16() {
        filler.fill(0, CopyBench.ELEMENTS, dest);
        return dest;
    }
}
