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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Any JMH benchmark class of this module timed by the CPU time of the thread that runs it
 * instead of the wall clock: on a shared VM whose other tenants hold the cores, wall time
 * measures the queue for a core, CPU time mostly the work (caches stay shared, so the figure
 * is inflated by the load; compare within one invocation, beside {@link CopyBench}).
 *
 * <p>Like JMH, it runs every combination of the class's {@code @Param} values, unless an
 * argument {@code name=v1,v2} picks some; for each, {@code @Setup}, then each
 * {@code @Benchmark} method whose name matches the pattern: {@code warmup} calls, then
 * {@code runs} calls, printing the best and the median CPU milliseconds per call (and
 * Gelem/s when {@code elements=N} says how many elements a call handles).
 *
 * <pre>
 * java --add-modules jdk.incubator.vector -Danamnesis.kernels=scalar -cp bench/target/benchmarks.jar \
 *      io.anamnesis.bench.CpuTime io.anamnesis.bench.GptqBench 'ToBf16' bits=4 [warmup=5] [runs=15] [elements=N]
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
        long elements = 0;
        Map<String, List<String>> params = new LinkedHashMap<>();
        for (Field f : type.getFields()) {
            Param p = f.getAnnotation(Param.class);
            if (p != null && p.value().length > 0) params.put(f.getName(), List.of(p.value()));
        }
        for (int a = 2; a < args.length; a++) {
            String[] kv = args[a].split("=", 2);
            switch (kv[0]) {
                case "warmup" -> warmup = Integer.parseInt(kv[1]);
                case "runs" -> runs = Integer.parseInt(kv[1]);
                case "elements" -> elements = Long.parseLong(kv[1]);
                default -> params.put(type.getField(kv[0]).getName(), List.of(kv[1].split(",")));
            }
        }
        List<Method> methods = new ArrayList<>();
        for (Method m : type.getMethods()) {
            if (m.isAnnotationPresent(Benchmark.class) && m.getName().matches(".*(" + pattern + ").*")) methods.add(m);
        }
        methods.sort((x, y) -> x.getName().compareTo(y.getName()));
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        for (Map<String, String> combination : combinations(new ArrayList<>(params.entrySet()), 0, new LinkedHashMap<>())) {
            Object bench = type.getDeclaredConstructor().newInstance();
            for (var e : combination.entrySet()) set(bench, type.getField(e.getKey()), e.getValue());
            for (Method m : type.getMethods()) {
                if (m.isAnnotationPresent(Setup.class)) m.invoke(bench);
            }
            for (Method m : methods) {
                for (int i = 0; i < warmup; i++) m.invoke(bench);
                long[] ns = new long[runs];
                for (int i = 0; i < runs; i++) {
                    long start = mx.getCurrentThreadCpuTime();
                    m.invoke(bench);
                    ns[i] = mx.getCurrentThreadCpuTime() - start;
                }
                Arrays.sort(ns);
                String rate = elements > 0
                        ? String.format(Locale.ROOT, "  %6.2f Gelem/CPU-s", elements / (double) ns[0]) : "";
                System.out.printf(Locale.ROOT, "%-40s %-24s best %8.2f ms  median %8.2f ms%s (CPU, %d runs)%n",
                        type.getSimpleName() + "." + m.getName(), combination, ns[0] / 1e6, ns[runs / 2] / 1e6,
                        rate, runs);
            }
            for (Method m : type.getMethods()) {
                if (m.isAnnotationPresent(TearDown.class)) m.invoke(bench);
            }
        }
    }

    /** Every combination of the parameters' values, in declaration order. */
    private static List<Map<String, String>> combinations(List<Map.Entry<String, List<String>>> params, int at,
                                                          Map<String, String> chosen) {
        if (at == params.size()) return List.of(new LinkedHashMap<>(chosen));
        List<Map<String, String>> out = new ArrayList<>();
        for (String v : params.get(at).getValue()) {
            chosen.put(params.get(at).getKey(), v);
            out.addAll(combinations(params, at + 1, chosen));
        }
        chosen.remove(params.get(at).getKey());
        return out;
    }

    private static void set(Object bench, Field f, String value) throws IllegalAccessException {
        Class<?> t = f.getType();
        if (t == int.class) f.setInt(bench, Integer.parseInt(value));
        else if (t == long.class) f.setLong(bench, Long.parseLong(value));
        else if (t == boolean.class) f.setBoolean(bench, Boolean.parseBoolean(value));
        else f.set(bench, value);
    }
}
