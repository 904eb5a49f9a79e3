package io.anamnesis.api;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
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

    /** Running partial sums of each figure: a chunk's sums end as this many, added lane by lane. */
    static final int LANES = 8;

    /** Values measured as one chunk, whose terms are added pairwise. */
    static final int CHUNK = 1024;

    /**
     * Measures {@code count} values: originals against what their encoding decodes to.
     *
     * <p>The order of the sums, fixed so that the figures do not depend on the thread that
     * measures: the values go in chunks of {@value #CHUNK}; within a chunk the terms of each
     * figure are added pairwise by halving (term j plus term j + 512, then j plus j + 256, ...,
     * down to {@value #LANES} partial sums), which are added to {@value #LANES} running lanes,
     * chunk after chunk; the lanes are added in a fixed tree at the end. The last, shorter
     * chunk, and a chunk that holds a non-finite original (left out of the sums, counted
     * apart), go element by element, element i of them into lane {@code i % LANES}. The
     * largest error is the largest of the errors' bit patterns: for doubles without a sign
     * that is the order of their values, with a NaN error above everything, as it must be.
     *
     * <p>Why this shape: every pass over a chunk is a loop C2 vectorizes (the errors and their
     * squares into arrays, the halvings, and the maximum on the bits in a {@code long[]}),
     * where eight running sums per figure along the elements, an order C2 must keep, took
     * 2.3-3.9 ns a value, and measuring took as long as encoding in a default (not quiet)
     * forget (docs/benchmarks.md).
     */
    public static Loss measure(float[] original, int originalOffset, float[] decoded, int decodedOffset, int count) {
        Objects.checkFromIndexSize(originalOffset, count, original.length);
        Objects.checkFromIndexSize(decodedOffset, count, decoded.length);
        Sums sums = new Sums(count >= CHUNK);
        int i = 0;
        for (; i + CHUNK <= count; i += CHUNK) {
            if (!sums.chunk(original, originalOffset + i, decoded, decodedOffset + i)) {
                sums.elementwise(original, originalOffset + i, decoded, decodedOffset + i, CHUNK);
            }
        }
        sums.elementwise(original, originalOffset + i, decoded, decodedOffset + i, count - i);
        return sums.loss(count);
    }

    /** The running sums of one {@link #measure} call, and its chunk's scratch arrays. */
    private static final class Sums {
        /** Per lane: sum |e|, then sum e^2, then sum x^2. */
        final double[] lanes = new double[3 * LANES];
        final double[] abs;
        final double[] sq;
        final double[] signal;
        final long[] bits;
        final MemorySegment bitsView;
        long maxBits;
        long nonFinite;

        Sums(boolean chunks) {
            abs = chunks ? new double[CHUNK] : null;
            sq = chunks ? new double[CHUNK] : null;
            signal = chunks ? new double[CHUNK] : null;
            bits = chunks ? new long[CHUNK] : null;
            bitsView = chunks ? MemorySegment.ofArray(bits) : null;
        }

        /** One whole chunk, pairwise; false, adding nothing, when an original in it is inf or NaN. */
        boolean chunk(float[] x, int xo, float[] d, int dO) {
            double[] a = abs;
            double[] q = sq;
            double[] s = signal;
            for (int j = 0; j < CHUNK; j++) {
                double xv = x[xo + j];
                double e = (double) d[dO + j] - xv;
                a[j] = Math.abs(e);
                q[j] = e * e;
                s[j] = xv * xv;
            }
            halve(s);
            // the square of a finite float is at most 1.2e77, and a sum of 1024 of them is
            // finite: a sum that is not means an inf or NaN original in the chunk
            for (int l = 0; l < LANES; l++) {
                if (!Double.isFinite(s[l])) return false;
            }
            MemorySegment.copy(a, 0, bitsView, ValueLayout.JAVA_DOUBLE, 0, CHUNK);
            halve(a);
            halve(q);
            for (int l = 0; l < LANES; l++) {
                lanes[l] += a[l];
                lanes[LANES + l] += q[l];
                lanes[2 * LANES + l] += s[l];
            }
            maxBits = Math.max(maxBits, largest(bits));
            return true;
        }

        /** {@code n} values one at a time, value i into lane {@code i % LANES}; non-finite originals counted apart. */
        void elementwise(float[] x, int xo, float[] d, int dO, int n) {
            for (int j = 0; j < n; j++) {
                float xv = x[xo + j];
                if (!Float.isFinite(xv)) {
                    nonFinite++;
                    continue;
                }
                int l = j % LANES;
                double e = (double) d[dO + j] - xv;
                double a = Math.abs(e);
                lanes[l] += a;
                lanes[LANES + l] += e * e;
                lanes[2 * LANES + l] += (double) xv * xv;
                maxBits = Math.max(maxBits, Double.doubleToRawLongBits(a));
            }
        }

        Loss loss(int count) {
            return new Loss(count - nonFinite, nonFinite, tree(lanes, 0), tree(lanes, LANES),
                    Double.longBitsToDouble(maxBits), tree(lanes, 2 * LANES));
        }

        // Each halving its own loop with a constant distance: C2 vectorizes these, not a loop
        // over the distance.

        /** v[0, 8) = the pairwise sums of v[0, 1024): term j plus term j + 512, and so on down. */
        private static void halve(double[] v) {
            for (int j = 0; j < 512; j++) v[j] += v[j + 512];
            for (int j = 0; j < 256; j++) v[j] += v[j + 256];
            for (int j = 0; j < 128; j++) v[j] += v[j + 128];
            for (int j = 0; j < 64; j++) v[j] += v[j + 64];
            for (int j = 0; j < 32; j++) v[j] += v[j + 32];
            for (int j = 0; j < 16; j++) v[j] += v[j + 16];
            for (int j = 0; j < 8; j++) v[j] += v[j + 8];
        }

        /** The largest of b[0, 1024), halving the same way (b is overwritten). */
        private static long largest(long[] b) {
            for (int j = 0; j < 512; j++) b[j] = Math.max(b[j], b[j + 512]);
            for (int j = 0; j < 256; j++) b[j] = Math.max(b[j], b[j + 256]);
            for (int j = 0; j < 128; j++) b[j] = Math.max(b[j], b[j + 128]);
            for (int j = 0; j < 64; j++) b[j] = Math.max(b[j], b[j + 64]);
            for (int j = 0; j < 32; j++) b[j] = Math.max(b[j], b[j + 32]);
            for (int j = 0; j < 16; j++) b[j] = Math.max(b[j], b[j + 16]);
            long m = b[0];
            for (int j = 1; j < 16; j++) m = Math.max(m, b[j]);
            return m;
        }
    }

    private static double tree(double[] lanes, int at) {
        return ((lanes[at] + lanes[at + 1]) + (lanes[at + 2] + lanes[at + 3]))
                + ((lanes[at + 4] + lanes[at + 5]) + (lanes[at + 6] + lanes[at + 7]));
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

    private final boolean measures;
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
        this(true, histogram);
    }

    private LossMeter(boolean measures, boolean histogram) {
        this.measures = measures;
        this.keepsHistogram = histogram;
    }

    /**
     * A meter for a run whose loss nobody reads: it records nothing, and producers that ask
     * {@link #measures()} skip decoding their output again to compare it. Measuring is about a
     * third of the CPU time of a Q8_0 encode (profiled: the second decode plus the sums).
     */
    public static LossMeter off() {
        return new LossMeter(false, false);
    }

    /**
     * Whether this meter records anything; when it does not, a producer need not compute the
     * decoded values it would hand to {@link #record(String, long, float[], int, float[], int, int)}.
     */
    public boolean measures() {
        return measures;
    }

    /**
     * Measures a chunk ({@link #measure}), records it ({@link #record(String, long, Loss)}) and,
     * when this meter keeps one, adds its errors to the {@link #histogram()}. Counts add up the
     * same in any order.
     */
    public Loss record(String tensor, long firstElement, float[] original, int originalOffset, float[] decoded,
                       int decodedOffset, int count) {
        if (!measures) return Loss.NONE;
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
        if (!measures || order.containsKey(tensor)) return;
        synchronized (order) {
            if (!order.containsKey(tensor)) {
                chunks.computeIfAbsent(tensor, t -> new TreeMap<>());
                order.put(tensor, order.size());
            }
        }
    }

    /** Records one chunk of a tensor, the chunk starting at element {@code firstElement}. */
    public void record(String tensor, long firstElement, Loss loss) {
        if (!measures) return;
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
