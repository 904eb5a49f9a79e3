package io.anamnesis.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The encode benchmarks of {@link BnbEncodeBench} and {@link Fp8EncodeBench} timed by the CPU
 * time of the thread that runs them, not by the wall clock: on a shared machine whose load
 * is many times its core count, a wall-clock JMH run measures the queue for a core, while the
 * thread's CPU time still measures the kernel (cache and memory bandwidth stay shared, so the
 * figure is a lower bound of the kernel's speed on an idle core). Same inputs, same calls;
 * 20 warm-up invocations (200 for the small band), then the median and the minimum of 15.
 * {@link BnbBench}'s NF4 decoder to BF16, measured the same way, is the yardstick: its JMH
 * figure on an idle machine is in docs/benchmarks.md, so the ratio says how much the load
 * slows a kernel even by CPU time.
 *
 * <pre>java --add-modules jdk.incubator.vector -Danamnesis.kernels=vector \
 *      -cp bench/target/benchmarks.jar io.anamnesis.bench.EncodeCpuTime</pre>
 */
public final class EncodeCpuTime {
    private EncodeCpuTime() {
    }

    public static void main(String[] args) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        BnbBench decode = new BnbBench();
        decode.setUp();
        time(mx, "yardstick: bnb nf4 decode", BnbBench.N, 20, () -> decode.nf4ToBf16().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
        decode.tearDown();
        for (int rows : new int[]{4096, 128}) {
            BnbEncodeBench bnb = new BnbEncodeBench();
            bnb.rows = rows;
            bnb.setUp();
            Fp8EncodeBench fp8 = new Fp8EncodeBench();
            fp8.rows = rows;
            fp8.setUp();
            Map<String, Supplier<byte[]>> kernels = new LinkedHashMap<>();
            kernels.put("bnb nf4", bnb::nf4);
            kernels.put("bnb fp4", bnb::fp4);
            kernels.put("bnb int8", bnb::int8);
            kernels.put("fp8 e4m3 per tensor", fp8::e4m3PerTensor);
            kernels.put("fp8 e4m3 128x128 blocks", fp8::e4m3Blocks);
            long elements = (long) rows * BnbEncodeBench.COLS;
            int warmup = rows == 128 ? 200 : 20;
            for (var k : kernels.entrySet()) {
                Supplier<byte[]> kernel = k.getValue();
                time(mx, k.getKey() + ", rows " + rows, elements, warmup, () -> kernel.get()[0]);
            }
        }
    }

    private static void time(ThreadMXBean mx, String name, long elements, int warmup, java.util.function.IntSupplier kernel) {
        long sink = 0;
        for (int i = 0; i < warmup; i++) sink += kernel.getAsInt();
        long[] ns = new long[15];
        for (int i = 0; i < ns.length; i++) {
            long t0 = mx.getCurrentThreadCpuTime();
            sink += kernel.getAsInt();
            ns[i] = mx.getCurrentThreadCpuTime() - t0;
        }
        Arrays.sort(ns);
        System.out.printf(Locale.ROOT, "%-36s median %8.3f ms  %5.2f Gelem/s per CPU-s (min %8.3f ms, %5.2f)%s%n",
                name, ns[ns.length / 2] / 1e6, elements / (double) ns[ns.length / 2],
                ns[0] / 1e6, elements / (double) ns[0], sink == 42 ? " " : "");
    }
}
