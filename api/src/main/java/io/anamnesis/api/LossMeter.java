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
     * Measures {@code count} values: originals against what their encoding decodes to. Four
     * interleaved sets of sums keep the adds independent, which is most of the speed; the
     * result is a pure function of the inputs, so the same at any thread count.
     */
    public static Loss measure(float[] original, int originalOffset, float[] decoded, int decodedOffset, int count) {
        long n = 0, nonFinite = 0;
        double abs0 = 0, abs1 = 0, abs2 = 0, abs3 = 0, sq0 = 0, sq1 = 0, sq2 = 0, sq3 = 0;
        double sig0 = 0, sig1 = 0, sig2 = 0, sig3 = 0, max = 0;
        int i = 0;
        for (; i + 3 < count; i += 4) {
            int o = originalOffset + i;
            int d = decodedOffset + i;
            float x0 = original[o];
            float x1 = original[o + 1];
            float x2 = original[o + 2];
            float x3 = original[o + 3];
            if (!Float.isFinite(x0) || !Float.isFinite(x1) || !Float.isFinite(x2) || !Float.isFinite(x3)) break;
            double e0 = (double) decoded[d] - x0;
            double e1 = (double) decoded[d + 1] - x1;
            double e2 = (double) decoded[d + 2] - x2;
            double e3 = (double) decoded[d + 3] - x3;
            abs0 += Math.abs(e0);
            abs1 += Math.abs(e1);
            abs2 += Math.abs(e2);
            abs3 += Math.abs(e3);
            sq0 += e0 * e0;
            sq1 += e1 * e1;
            sq2 += e2 * e2;
            sq3 += e3 * e3;
            sig0 += (double) x0 * x0;
            sig1 += (double) x1 * x1;
            sig2 += (double) x2 * x2;
            sig3 += (double) x3 * x3;
            // Math.max keeps a NaN error once seen, as the sums do
            max = Math.max(max, Math.max(Math.max(Math.abs(e0), Math.abs(e1)), Math.max(Math.abs(e2), Math.abs(e3))));
            n += 4;
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
        return new Loss(n, nonFinite, (abs0 + abs1) + (abs2 + abs3), (sq0 + sq1) + (sq2 + sq3), max,
                (sig0 + sig1) + (sig2 + sig3));
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

    private final boolean keepsHistogram;
    private final long[] histogram = new long[Histogram.BINS];
    private long exact;

    /** A meter of the sums only. */
    public LossMeter() {
        this(false);
    }

    /**
     * @param histogram whether {@link #record(String, long, float[], int, float[], int, int)}
     *                  also counts every value into the {@link #histogram()} (a cost per value,
     *                  for those who will look at it)
     */
    public LossMeter(boolean histogram) {
        this.keepsHistogram = histogram;
    }

    /**
     * Measures a chunk ({@link #measure}), records it ({@link #record(String, long, Loss)}) and,
     * when this meter keeps one, adds its errors to the {@link #histogram()}. Counts add up the
     * same in any order.
     */
    public Loss record(String tensor, long firstElement, float[] original, int originalOffset, float[] decoded,
                       int decodedOffset, int count) {
        Loss loss = measure(original, originalOffset, decoded, decodedOffset, count);
        record(tensor, firstElement, loss);
        if (!keepsHistogram) return loss;
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
        return loss;
    }

    /** Whether this meter counts errors into a histogram. */
    public boolean keepsHistogram() {
        return keepsHistogram;
    }

    /**
     * The errors of every chunk recorded with {@link #record(String, long, float[], int, float[], int, int)};
     * empty unless the meter {@linkplain #keepsHistogram() keeps one}.
     */
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
