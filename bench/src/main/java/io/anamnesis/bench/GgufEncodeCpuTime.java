package io.anamnesis.bench;

import io.anamnesis.quant.gguf.GgufEncoding;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Locale;

/**
 * The GgufEncodeBench workload timed by the thread's CPU time instead of the wall clock,
 * for machines shared with other load (where JMH's wall time measures the share of the CPU
 * the benchmark got as much as the kernel). Same matrix, same types; per type, a warm-up of
 * {@code warm} CPU seconds, then the best single call over {@code measure} CPU seconds.
 * {@code bench/scripts/ggml_encode_reference.py} reports ggml's C quantizer the same way.
 *
 * <pre>java --add-modules jdk.incubator.vector -cp bench/target/benchmarks.jar \
 *     io.anamnesis.bench.GgufEncodeCpuTime [warm measure] [types...]</pre>
 */
public final class GgufEncodeCpuTime {
    private GgufEncodeCpuTime() {
    }

    public static void main(String[] args) {
        double warm = 3;
        double measure = 3;
        int first = 0;
        if (args.length >= 2 && args[0].matches("[0-9.]+")) {
            warm = Double.parseDouble(args[0]);
            measure = Double.parseDouble(args[1]);
            first = 2;
        }
        String[] types = args.length > first ? java.util.Arrays.copyOfRange(args, first, args.length)
                : new String[] {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K",
                        "q4_0+imatrix", "q4_1+imatrix", "q5_0+imatrix", "q5_1+imatrix",
                        "q2_K+imatrix", "q3_K+imatrix", "q4_K+imatrix", "q5_K+imatrix", "q6_K+imatrix",
                        "tq1_0", "tq2_0", "mxfp4", "nvfp4", "q1_0", "q2_0", "f16", "bf16"};
        int rows = GgufEncodeBench.ROWS;
        int cols = GgufEncodeBench.COLS;
        float[] x = GgufEncodeBench.weightLike(rows, cols, 20240618);
        float[] importance = GgufEncodeBench.importanceRow(cols, 1234);
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        System.out.printf(Locale.ROOT, "%-14s %10s %10s %9s%n", "type", "best ms", "median ms", "Gelem/s");
        for (String t : types) {
            String name = t.replace("+imatrix", "");
            float[] w = t.endsWith("+imatrix") ? importance : null;
            long until = mx.getCurrentThreadCpuTime() + (long) (warm * 1e9);
            while (mx.getCurrentThreadCpuTime() < until) GgufEncoding.encode(name, x, rows, cols, w);
            long[] times = new long[100_000];
            int n = 0;
            until = mx.getCurrentThreadCpuTime() + (long) (measure * 1e9);
            while ((mx.getCurrentThreadCpuTime() < until || n < 5) && n < times.length) {
                long t0 = mx.getCurrentThreadCpuTime();
                GgufEncoding.encode(name, x, rows, cols, w);
                times[n++] = mx.getCurrentThreadCpuTime() - t0;
            }
            java.util.Arrays.sort(times, 0, n);
            double best = times[0] / 1e6;
            double median = times[n / 2] / 1e6;
            System.out.printf(Locale.ROOT, "%-14s %10.3f %10.3f %9.3f%n", t, best, median, x.length / (median * 1e6));
        }
    }
}
