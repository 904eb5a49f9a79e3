package io.anamnesis.api;

import io.anamnesis.api.numeric.KernelRace;
import io.anamnesis.api.numeric.Kernels;

import java.util.Arrays;
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

    /** Lanes of the sums: element {@code i} goes to lane {@code i % LANES}. */
    static final int LANES = 8;

    /** Whether the Vector API sums may run: the module is resolved, allowed, and 512 bits wide. */
    private static final boolean VECTOR = Kernels.vectorAllowed() && vectorWide();

    private static boolean vectorWide() {
        try {
            return LossVectors.wide();
        } catch (LinkageError e) {
            return false;
        }
    }

    /** Starts on the scalar sums, switches once C2 has compiled the vector ones (see KernelRace). */
    private static final KernelRace RACE = new KernelRace("loss", () -> LossProbe.run(false), () -> LossProbe.run(true));

    private static final class LossProbe {
        static final float[] X = new float[1 << 13];
        static final float[] Y = new float[1 << 13];
        static final double[] LANES_OUT = new double[4 * LANES];

        static {
            for (int i = 0; i < X.length; i++) {
                X[i] = (float) Math.sin(i);
                Y[i] = X[i] + 0x1p-10f;
            }
        }

        static void run(boolean vector) {
            Arrays.fill(LANES_OUT, 0);
            if (vector) LossVectors.sums(X, 0, Y, 0, X.length, LANES_OUT);
            else scalarSums(X, 0, Y, 0, X.length, LANES_OUT);
        }
    }

    /**
     * Measures {@code count} values: originals against what their encoding decodes to.
     * Element {@code i} is summed into lane {@code i % 8} and the lanes are added at the end
     * in a fixed tree, an order that does not depend on the thread that measures nor on the
     * kernels (the Vector API sums, where they run, are the same double operations lane by
     * lane, so the figures are bit-identical either way).
     */
    public static Loss measure(float[] original, int originalOffset, float[] decoded, int decodedOffset, int count) {
        Objects.checkFromIndexSize(originalOffset, count, original.length);
        Objects.checkFromIndexSize(decodedOffset, count, decoded.length);
        // per lane: sum |e|, sum e^2, sum x^2, max |e|
        double[] lanes = new double[4 * LANES];
        int i = VECTOR && RACE.getAsBoolean()
                ? LossVectors.sums(original, originalOffset, decoded, decodedOffset, count, lanes)
                : scalarSums(original, originalOffset, decoded, decodedOffset, count, lanes);
        long nonFinite = 0;
        // from the first step with a non-finite original (rare) and the tail: one element at a time, same lanes
        for (; i < count; i++) {
            float x = original[originalOffset + i];
            if (!Float.isFinite(x)) {
                nonFinite++;
                continue;
            }
            int l = i % LANES;
            double e = (double) decoded[decodedOffset + i] - x;
            double a = Math.abs(e);
            lanes[l] += a;
            lanes[LANES + l] += e * e;
            lanes[2 * LANES + l] += (double) x * x;
            if (a > lanes[3 * LANES + l] || a != a) lanes[3 * LANES + l] = a;
        }
        double m = 0;
        for (int l = 0; l < LANES; l++) {
            double v = lanes[3 * LANES + l];
            if (v > m || v != v) m = v;
        }
        return new Loss(count - nonFinite, nonFinite, tree(lanes, 0), tree(lanes, LANES), m, tree(lanes, 2 * LANES));
    }

    private static double tree(double[] lanes, int at) {
        return ((lanes[at] + lanes[at + 1]) + (lanes[at + 2] + lanes[at + 3]))
                + ((lanes[at + 4] + lanes[at + 5]) + (lanes[at + 6] + lanes[at + 7]));
    }

    /**
     * The lane sums over whole steps of {@link #LANES} elements, up to the first step that
     * holds a non-finite original; returns where it stopped. Two passes of four lanes each
     * (lanes 0-3, then 4-7), so that each pass keeps its sums in registers; every lane still
     * adds its own elements in element order.
     */
    static int scalarSums(float[] original, int oo, float[] decoded, int dO, int count, double[] lanes) {
        int end = 0;
        while (end + LANES <= count && finiteStep(original, oo + end)) end += LANES;
        for (int half = 0; half < LANES; half += 4) {
            double a0 = 0, a1 = 0, a2 = 0, a3 = 0, q0 = 0, q1 = 0, q2 = 0, q3 = 0, s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            double m0 = 0, m1 = 0, m2 = 0, m3 = 0;
            for (int i = half; i < end; i += LANES) {
                float x0 = original[oo + i], x1 = original[oo + i + 1], x2 = original[oo + i + 2], x3 = original[oo + i + 3];
                double e0 = (double) decoded[dO + i] - x0, e1 = (double) decoded[dO + i + 1] - x1;
                double e2 = (double) decoded[dO + i + 2] - x2, e3 = (double) decoded[dO + i + 3] - x3;
                double b0 = Math.abs(e0), b1 = Math.abs(e1), b2 = Math.abs(e2), b3 = Math.abs(e3);
                a0 += b0;
                a1 += b1;
                a2 += b2;
                a3 += b3;
                q0 += e0 * e0;
                q1 += e1 * e1;
                q2 += e2 * e2;
                q3 += e3 * e3;
                s0 += (double) x0 * x0;
                s1 += (double) x1 * x1;
                s2 += (double) x2 * x2;
                s3 += (double) x3 * x3;
                // a > max, or a NaN decoded value, which then stays the maximum
                if (b0 > m0 || b0 != b0) m0 = b0;
                if (b1 > m1 || b1 != b1) m1 = b1;
                if (b2 > m2 || b2 != b2) m2 = b2;
                if (b3 > m3 || b3 != b3) m3 = b3;
            }
            lanes[half] = a0;
            lanes[half + 1] = a1;
            lanes[half + 2] = a2;
            lanes[half + 3] = a3;
            lanes[LANES + half] = q0;
            lanes[LANES + half + 1] = q1;
            lanes[LANES + half + 2] = q2;
            lanes[LANES + half + 3] = q3;
            lanes[2 * LANES + half] = s0;
            lanes[2 * LANES + half + 1] = s1;
            lanes[2 * LANES + half + 2] = s2;
            lanes[2 * LANES + half + 3] = s3;
            lanes[3 * LANES + half] = m0;
            lanes[3 * LANES + half + 1] = m1;
            lanes[3 * LANES + half + 2] = m2;
            lanes[3 * LANES + half + 3] = m3;
        }
        return end;
    }

    /** Whether the {@link #LANES} originals from {@code at} are all finite (an exponent of all ones is inf or NaN). */
    private static boolean finiteStep(float[] x, int at) {
        boolean finite = true;
        for (int k = 0; k < LANES; k++) finite &= (Float.floatToRawIntBits(x[at + k]) & 0x7F80_0000) != 0x7F80_0000;
        return finite;
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
