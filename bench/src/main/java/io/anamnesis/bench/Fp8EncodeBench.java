package io.anamnesis.bench;

import io.anamnesis.api.DType;
import io.anamnesis.quant.fp8.Fp8Encoder;
import io.anamnesis.quant.fp8.Fp8Format;
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

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * FP8 encoders ("forget") on the 4096 x 11008 benchmark matrix of weight-like F32 values,
 * single thread, the whole tensor per invocation: E4M3 with one per-tensor scale (amax pass,
 * then codes), and E4M3 with 128x128 block scales (each block's amax, its scale, its codes).
 * Gelem/s = rows x 11008 / the time.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xmx2g", "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class Fp8EncodeBench {
    static final int COLS = 11008;

    /**
     * 4096: the whole benchmark matrix (180 MB of F32 in, so memory bandwidth counts);
     * 128: one 128-row band (5.6 MB, stays in the last-level cache), the kernels' own speed.
     */
    @Param({"4096", "128"})
    public int rows;

    private int n;
    static final int B = 128;

    private float[] x;
    private byte[] codes;
    private float[] scales;

    @Setup(Level.Trial)
    public void setUp() {
        SplittableRandom rnd = new SplittableRandom(42);
        n = rows * COLS;
        x = new float[n];
        for (int i = 0; i < n; i++) {
            double v = rnd.nextGaussian() * 0.02;
            if (rnd.nextInt(500) == 0) v *= 20;
            x[i] = (float) v;
        }
        codes = new byte[n];
        scales = new float[(rows / B) * (COLS / B)];
    }

    @Benchmark
    public byte[] e4m3PerTensor() {
        float s = Fp8Encoder.scale(Fp8Format.E4M3, Fp8Encoder.finiteAbsmax(x, 0, n), DType.F32);
        Fp8Encoder.encode(Fp8Format.E4M3, x, 0, n, s, codes, 0, null);
        return codes;
    }

    @Benchmark
    public byte[] e4m3Blocks() {
        int sc = COLS / B;
        for (int br = 0; br < rows / B; br++) {
            for (int bc = 0; bc < sc; bc++) {
                float amax = 0;
                for (int r = br * B; r < (br + 1) * B; r++) {
                    amax = Math.max(amax, Fp8Encoder.finiteAbsmax(x, r * COLS + bc * B, r * COLS + (bc + 1) * B));
                }
                scales[br * sc + bc] = Fp8Encoder.scale(Fp8Format.E4M3, amax, DType.F32);
            }
            for (int r = br * B; r < (br + 1) * B; r++) {
                for (int bc = 0; bc < sc; bc++) {
                    Fp8Encoder.encode(Fp8Format.E4M3, x, r * COLS + bc * B, B, scales[br * sc + bc], codes, r * COLS + bc * B, null);
                }
            }
        }
        return codes;
    }
}
