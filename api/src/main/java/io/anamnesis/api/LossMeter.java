package io.anamnesis.api;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SequencedMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What forgetting lost: the error between the values a model had and the values its encoded
 * form decodes to, per tensor and over all. Producers report per chunk from any thread;
 * sums are combined in element order, so the figures do not depend on the thread count.
 * Non-finite originals (inf, NaN) are counted apart and left out of the sums.
 */
public final class LossMeter {

    /**
     * Sums over some elements.
     *
     * @param count       finite elements measured
     * @param nonFinite   elements whose original was inf or NaN
     * @param sumAbs      sum of |decoded - original|
     * @param sumSq       sum of (decoded - original)^2
     * @param maxAbs      max |decoded - original|
     * @param sumSignalSq sum of original^2
     */
    public record Loss(long count, long nonFinite, double sumAbs, double sumSq, double maxAbs, double sumSignalSq) {
        public static final Loss NONE = new Loss(0, 0, 0, 0, 0, 0);

        public Loss plus(Loss o) {
            return new Loss(count + o.count, nonFinite + o.nonFinite, sumAbs + o.sumAbs, sumSq + o.sumSq,
                    Math.max(maxAbs, o.maxAbs), sumSignalSq + o.sumSignalSq);
        }

        /** Mean absolute error. */
        public double mae() {
            return count == 0 ? 0 : sumAbs / count;
        }

        public double rmse() {
            return count == 0 ? 0 : Math.sqrt(sumSq / count);
        }

        /** Signal-to-noise ratio in dB: 10 log10(sum x^2 / sum e^2); +inf when nothing was lost. */
        public double snrDb() {
            if (sumSq == 0) return Double.POSITIVE_INFINITY;
            return 10 * Math.log10(sumSignalSq / sumSq);
        }
    }

    /**
     * Measures {@code count} values: originals against what their encoding decodes to. Two
     * interleaved sets of sums (even and odd elements) keep the adds independent, which is
     * most of the speed; the result is a pure function of the inputs, so the same at any
     * thread count.
     */
    public static Loss measure(float[] original, int originalOffset, float[] decoded, int decodedOffset, int count) {
        long n = 0, nonFinite = 0;
        double abs0 = 0, abs1 = 0, sq0 = 0, sq1 = 0, sig0 = 0, sig1 = 0, max = 0;
        int i = 0;
        for (; i + 1 < count; i += 2) {
            float x0 = original[originalOffset + i];
            float x1 = original[originalOffset + i + 1];
            if (!Float.isFinite(x0) || !Float.isFinite(x1)) break;
            double e0 = (double) decoded[decodedOffset + i] - x0;
            double e1 = (double) decoded[decodedOffset + i + 1] - x1;
            double a0 = Math.abs(e0);
            double a1 = Math.abs(e1);
            abs0 += a0;
            abs1 += a1;
            sq0 += e0 * e0;
            sq1 += e1 * e1;
            sig0 += (double) x0 * x0;
            sig1 += (double) x1 * x1;
            // Math.max keeps a NaN error once seen, as the sums do
            max = Math.max(max, Math.max(a0, a1));
            n += 2;
        }
        for (; i < count; i++) {
            float x = original[originalOffset + i];
            if (!Float.isFinite(x)) {
                nonFinite++;
                continue;
            }
            double e = (double) decoded[decodedOffset + i] - x;
            double a = Math.abs(e);
            n++;
            abs0 += a;
            sq0 += e * e;
            max = Math.max(max, a);
            sig0 += (double) x * x;
        }
        return new Loss(n, nonFinite, abs0 + abs1, sq0 + sq1, max, sig0 + sig1);
    }

    /**
     * How many measured elements had each size of error, by binary order of magnitude:
     * {@code counts[i]} holds errors {@code |decoded - original|} in
     * {@code [2^(MIN_EXPONENT + i), 2^(MIN_EXPONENT + i + 1))}, smaller ones in the first bin
     * and larger ones in the last; {@code exact} counts the elements decoded without error.
     * NaN errors and non-finite originals are not counted.
     */
    public record Histogram(long exact, long[] counts) {
        public static final int MIN_EXPONENT = -40;
        public static final int BINS = 57;

        public Histogram {
            if (counts.length != BINS) throw new IllegalArgumentException("a histogram has " + BINS + " bins");
            counts = counts.clone();
        }

        @Override
        public long[] counts() {
            return counts.clone();
        }

        /** The smallest error bin {@code i} holds (the first bin also holds everything smaller). */
        public static double lowerBound(int bin) {
            return Math.scalb(1.0, MIN_EXPONENT + bin);
        }

        /** Elements counted, exact ones included. */
        public long total() {
            long t = exact;
            for (long c : counts) t += c;
            return t;
        }

        static int bin(double error) {
            int e = Math.getExponent(error) - MIN_EXPONENT;
            return e < 0 ? 0 : Math.min(e, BINS - 1);
        }
    }

    private final long[] histogram = new long[Histogram.BINS];
    private long exact;

    /**
     * Measures a chunk ({@link #measure}), records it ({@link #record(String, long, Loss)}) and
     * adds its errors to the {@link #histogram()}. Counts add up the same in any order.
     */
    public Loss record(String tensor, long firstElement, float[] original, int originalOffset, float[] decoded,
                       int decodedOffset, int count) {
        Loss loss = measure(original, originalOffset, decoded, decodedOffset, count);
        long[] bins = new long[Histogram.BINS];
        long zero = 0;
        for (int i = 0; i < count; i++) {
            float x = original[originalOffset + i];
            if (!Float.isFinite(x)) continue;
            double e = Math.abs((double) decoded[decodedOffset + i] - x);
            if (e == 0) zero++;
            else if (e == e) bins[Histogram.bin(e)]++;
        }
        synchronized (histogram) {
            for (int b = 0; b < bins.length; b++) histogram[b] += bins[b];
            exact += zero;
        }
        record(tensor, firstElement, loss);
        return loss;
    }

    /** The errors of every chunk recorded with {@link #record(String, long, float[], int, float[], int, int)}. */
    public Histogram histogram() {
        synchronized (histogram) {
            return new Histogram(exact, histogram);
        }
    }

    private final Map<String, TreeMap<Long, Loss>> chunks = new ConcurrentHashMap<>();
    private final Map<String, Integer> order = new ConcurrentHashMap<>();

    /** Announces a tensor that will be measured, fixing its place in {@link #perTensor()}. */
    public void expect(String tensor) {
        if (order.containsKey(tensor)) return;
        synchronized (order) {
            if (!order.containsKey(tensor)) {
                chunks.computeIfAbsent(tensor, t -> new TreeMap<>());
                order.put(tensor, order.size());
            }
        }
    }

    /** Records one chunk of a tensor, the chunk starting at element {@code firstElement}. */
    public void record(String tensor, long firstElement, Loss loss) {
        expect(tensor);
        TreeMap<Long, Loss> m = chunks.get(tensor);
        synchronized (m) {
            m.merge(firstElement, loss, Loss::plus);
        }
    }

    /** Each measured tensor's loss, in the order tensors were announced. */
    public SequencedMap<String, Loss> perTensor() {
        SequencedMap<String, Loss> out = new LinkedHashMap<>();
        order.entrySet().stream().sorted(Map.Entry.comparingByValue()).forEach(e -> {
            TreeMap<Long, Loss> m = chunks.get(e.getKey());
            Loss sum = Loss.NONE;
            synchronized (m) {
                for (Loss l : m.values()) sum = sum.plus(l);
            }
            out.put(e.getKey(), sum);
        });
        return out;
    }

    /** All tensors together, summed in tensor order. */
    public Loss total() {
        Loss sum = Loss.NONE;
        for (Loss l : perTensor().values()) sum = sum.plus(l);
        return sum;
    }
}
