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

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * GGUF encoding ("forget") of F32 rows, single thread, through the public entry point
 * {@link GgufEncoding#encode} on a weight-like [256, 4096] matrix (1,048,576 elements):
 * N(0, 0.02) with a log-normal scale per row and 0.2 % outliers x12, as ggml-quantize's
 * corpus rows. {@code +imatrix} runs pass an importance row shaped like llama-imatrix output
 * (squared log-normal column scales). Elements/s = 1,048,576 / time. ggml's C quantizer and
 * gguf-py on the same shape: {@code bench/scripts/ggml_encode_reference.py}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
public class GgufEncodeBench {
    static final int ROWS = 256;
    static final int COLS = 4096;

    @Param({"q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K",
            "q4_0+imatrix", "q4_1+imatrix", "q5_0+imatrix", "q5_1+imatrix",
            "q2_K+imatrix", "q3_K+imatrix", "q4_K+imatrix", "q5_K+imatrix", "q6_K+imatrix",
            "tq1_0", "tq2_0", "mxfp4", "nvfp4", "q1_0", "q2_0", "f16", "bf16"})
    public String type;

    private String ggmlType;
    private float[] rows;
    private float[] importance;

    @Setup(Level.Trial)
    public void setUp() {
        ggmlType = type.replace("+imatrix", "");
        rows = weightLike(ROWS, COLS, 20240618);
        importance = type.endsWith("+imatrix") ? importanceRow(COLS, 1234) : null;
    }

    static float[] weightLike(int nRows, int nCols, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] x = new float[nRows * nCols];
        for (int r = 0; r < nRows; r++) {
            double rowScale = 0.02 * Math.exp(0.3 * gaussian(rnd));
            for (int c = 0; c < nCols; c++) {
                double v = rowScale * gaussian(rnd);
                if (rnd.nextDouble() < 0.002) v *= 12;
                x[r * nCols + c] = (float) v;
            }
        }
        return x;
    }

    static float[] importanceRow(int nCols, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] w = new float[nCols];
        for (int c = 0; c < nCols; c++) {
            double s = Math.exp(0.5 * gaussian(rnd));
            w[c] = (float) (s * s);
        }
        return w;
    }

    private static double gaussian(SplittableRandom rnd) {
        double u = rnd.nextDouble();
        double v = rnd.nextDouble();
        return Math.sqrt(-2 * Math.log(1 - u)) * Math.cos(2 * Math.PI * v);
    }

    @Benchmark
    public byte[] encode() {
        return GgufEncoding.encode(ggmlType, rows, ROWS, COLS, importance);
    }
}
