package io.anamnesis.bench;

import io.anamnesis.quant.bnb.FourBitEncoder;
import io.anamnesis.quant.bnb.Int8Encoder;
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
 * bitsandbytes encoders ("forget") on the 4096 x 11008 benchmark matrix of weight-like F32
 * values (N(0, 0.02) with 0.2 % outliers), single thread, the whole tensor per invocation:
 * NF4 and FP4 (block absmax, then the codes, packed) with block 64, and LLM.int8() row by row
 * (float16 cast, SCB, codes). Gelem/s = rows x 11008 / the time.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xmx2g", "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class BnbEncodeBench {
    static final int COLS = 11008;

    /**
     * 4096: the whole benchmark matrix (180 MB of F32 in, so memory bandwidth counts);
     * 128: one 128-row band (5.6 MB, stays in the last-level cache), the kernels' own speed.
     */
    @Param({"4096", "128"})
    public int rows;

    private int n;
    static final int BLOCK = 64;

    private float[] x;
    private float[] absmax;
    private byte[] packed;
    private byte[] int8;
    private float[] scb;
    private float[] half;

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
        absmax = new float[n / BLOCK];
        packed = new byte[n / 2];
        int8 = new byte[n];
        scb = new float[rows];
        half = new float[COLS];
    }

    @Benchmark
    public byte[] nf4() {
        FourBitEncoder.blockAbsmax(x, 0, n, BLOCK, absmax, 0);
        FourBitEncoder.encode(false, x, 0, n, BLOCK, absmax, 0, packed, 0);
        return packed;
    }

    @Benchmark
    public byte[] fp4() {
        FourBitEncoder.blockAbsmax(x, 0, n, BLOCK, absmax, 0);
        FourBitEncoder.encode(true, x, 0, n, BLOCK, absmax, 0, packed, 0);
        return packed;
    }

    @Benchmark
    public byte[] int8() {
        for (int r = 0; r < rows; r++) scb[r] = Int8Encoder.encodeRow(x, r * COLS, COLS, int8, r * COLS, half);
        return int8;
    }
}
