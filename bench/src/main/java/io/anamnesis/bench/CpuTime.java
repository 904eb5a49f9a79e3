package io.anamnesis.bench;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.TearDown;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The JMH benchmarks timed by this thread's CPU time instead of wall time: on a shared VM
 * whose other tenants hold the cores, wall time measures the queue, CPU time mostly the work.
 * Runs each {@code @Benchmark} method of one class whose name matches, {@code warmup} calls
 * then {@code runs} calls, and prints the best and the median CPU milliseconds per call.
 * Compare within one invocation only (cache contention still varies with the load), and
 * always beside {@link CopyBench}'s copy of the same run.
 *
 * <pre>
 * java -cp bench/target/benchmarks.jar io.anamnesis.bench.CpuTime \
 *      io.anamnesis.bench.GptqBench 'ToBf16' bits=4 [warmup=5] [runs=15]
 * </pre>
 */
public final class CpuTime {
    private CpuTime() {
    }

    public static void main(String[] args) throws Exception {
        Class<?> type = Class.forName(args[0]);
        String pattern = args.length > 1 ? args[1] : "";
        int warmup = 5;
        int runs = 15;
        Object bench = type.getDeclaredConstructor().newInstance();
        for (Field f : type.getFields()) {
            Param p = f.getAnnotation(Param.class);
            if (p != null && p.value().length > 0) set(bench, f, p.value()[0]); // JMH's first value
        }
        for (int a = 2; a < args.length; a++) {
            String[] kv = args[a].split("=", 2);
            switch (kv[0]) {
                case "warmup" -> warmup = Integer.parseInt(kv[1]);
                case "runs" -> runs = Integer.parseInt(kv[1]);
                default -> set(bench, type.getField(kv[0]), kv[1]);
            }
        }
        for (Method m : type.getMethods()) {
            if (m.isAnnotationPresent(Setup.class)) m.invoke(bench);
        }
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        List<Method> methods = new ArrayList<>();
        for (Method m : type.getMethods()) {
            if (m.isAnnotationPresent(Benchmark.class) && m.getName().matches(".*" + pattern + ".*")) methods.add(m);
        }
        methods.sort((x, y) -> x.getName().compareTo(y.getName()));
        for (Method m : methods) {
            for (int i = 0; i < warmup; i++) m.invoke(bench);
            long[] ns = new long[runs];
            for (int i = 0; i < runs; i++) {
                long start = mx.getCurrentThreadCpuTime();
                m.invoke(bench);
                ns[i] = mx.getCurrentThreadCpuTime() - start;
            }
            Arrays.sort(ns);
            System.out.printf("%-40s best %8.2f ms  median %8.2f ms (CPU, %d runs)%n",
                    type.getSimpleName() + "." + m.getName(), ns[0] / 1e6, ns[runs / 2] / 1e6, runs);
        }
        for (Method m : type.getMethods()) {
            if (m.isAnnotationPresent(TearDown.class)) m.invoke(bench);
        }
    }

    private static void set(Object bench, Field f, String value) throws IllegalAccessException {
        Class<?> t = f.getType();
        if (t == int.class) f.setInt(bench, Integer.parseInt(value));
        else if (t == long.class) f.setLong(bench, Long.parseLong(value));
        else if (t == boolean.class) f.setBoolean(bench, Boolean.parseBoolean(value));
        else f.set(bench, value);
    }
}
