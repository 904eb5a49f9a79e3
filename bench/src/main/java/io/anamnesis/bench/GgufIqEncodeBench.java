package io.anamnesis.bench;

import io.anamnesis.quant.gguf.GgufEncoding;
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
import org.openjdk.jmh.annotations.Warmup;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * GGUF i-quant encoding (ggml's {@code ggml_quantize_chunk}), single thread: one op encodes
 * a weight-like [16, 4096] F32 matrix (65,536 elements), with or without an importance row
 * (IQ2_XXS, IQ2_XS and IQ1_S always take one, as ggml requires). Melem/s = 65,536 / time.
 *
 * <p>The data is a counter-based splitmix64 stream, so that {@code bench/scripts/
 * ggml_iq_encode_timing.py} builds the same matrix bit for bit and times ggml's C encoder
 * on it: x = 0.02 * rowScale * (u1 + u2 + u3 + u4 - 2), one value in 512 times 12, and
 * importance 0.25 + 4u (see {@link #draw}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1)
public class GgufIqEncodeBench {
    static final int ROWS = 16;
    static final int COLS = 4096;

    @Param({"IQ4_NL", "IQ4_XS", "IQ3_XXS", "IQ3_S", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M"})
    public String type;

    @Param({"false", "true"})
    public boolean imatrix;

    private float[] rows;
    private float[] importance;

    @Setup(Level.Trial)
    public void setUp() {
        rows = matrix();
        boolean required = type.equals("IQ2_XXS") || type.equals("IQ2_XS") || type.equals("IQ1_S");
        importance = imatrix || required ? importance() : null;
        GgufEncoding.encode(type, rows, ROWS, COLS, importance);   // builds the grid tables outside the timing
    }

    @Benchmark
    public byte[] encode() {
        return GgufEncoding.encode(type, rows, ROWS, COLS, importance);
    }

    /**
     * Thread CPU time per op, the figure that holds up on a loaded machine (JMH measures wall
     * time): per type and importance setting, the first call (which builds the type's grid
     * tables, in a JVM not yet warm), 40 warm-up calls, then the median CPU time of
     * {@code calls} (default 15). Run: {@code java -cp bench/target/benchmarks.jar
     * io.anamnesis.bench.GgufIqEncodeBench [calls [TYPE,...]]}.
     */
    public static void main(String[] args) {
        int calls = args.length > 0 ? Integer.parseInt(args[0]) : 15;
        String[] types = args.length > 1 ? args[1].split(",")
                : new String[]{"IQ4_NL", "IQ4_XS", "IQ3_XXS", "IQ3_S", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M"};
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        float[] x = matrix();
        float[] w = importance();
        for (String t : types) {
            boolean required = t.equals("IQ2_XXS") || t.equals("IQ2_XS") || t.equals("IQ1_S");
            for (boolean imp : new boolean[]{false, true}) {
                if (required && !imp) continue;
                float[] importance = imp ? w : null;
                long first = mx.getCurrentThreadCpuTime();
                GgufEncoding.encode(t, x, ROWS, COLS, importance);
                first = mx.getCurrentThreadCpuTime() - first;
                for (int i = 0; i < 40; i++) GgufEncoding.encode(t, x, ROWS, COLS, importance);
                long[] cpu = new long[calls];
                for (int i = 0; i < calls; i++) {
                    long c = mx.getCurrentThreadCpuTime();
                    GgufEncoding.encode(t, x, ROWS, COLS, importance);
                    cpu[i] = mx.getCurrentThreadCpuTime() - c;
                }
                Arrays.sort(cpu);
                double ms = cpu[calls / 2] / 1e6;
                System.out.printf("%-8s imatrix=%-5s thread CPU median %.2f ms  %.2f Melem/s  (first call %.0f ms)%n",
                        t, imp, ms, ROWS * COLS / ms / 1e3, first / 1e6);
            }
        }
    }

    /** Draw k of splitmix64 seeded with {@code seed}, as a double in [0, 1). */
    static double draw(long seed, long k) {
        long z = seed + (k + 1) * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        z ^= z >>> 31;
        return (z >>> 11) * 0x1.0p-53;
    }

    static float[] matrix() {
        float[] x = new float[ROWS * COLS];
        for (int i = 0; i < x.length; i++) {
            double g = draw(1, 5L * i) + draw(1, 5L * i + 1) + draw(1, 5L * i + 2) + draw(1, 5L * i + 3) - 2;
            double rowScale = 0.5 + (i / COLS % 7) * 0.25;
            x[i] = (float) (g * 0.02 * rowScale);
            if (draw(1, 5L * i + 4) < 1.0 / 512) x[i] *= 12;
        }
        return x;
    }

    static float[] importance() {
        float[] w = new float[COLS];
        for (int i = 0; i < COLS; i++) w[i] = (float) (0.25 + 4 * draw(2, i));
        return w;
    }
}
