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

    /** Measures {@code count} values: originals against what their encoding decodes to. */
    public static Loss measure(float[] original, int originalOffset, float[] decoded, int decodedOffset, int count) {
        long n = 0, nonFinite = 0;
        double sumAbs = 0, sumSq = 0, max = 0, signal = 0;
        for (int i = 0; i < count; i++) {
            float x = original[originalOffset + i];
            if (!Float.isFinite(x)) {
                nonFinite++;
                continue;
            }
            double e = (double) decoded[decodedOffset + i] - x;
            double a = Math.abs(e);
            n++;
            sumAbs += a;
            sumSq += e * e;
            if (a > max || Double.isNaN(a)) max = a;
            signal += (double) x * x;
        }
        return new Loss(n, nonFinite, sumAbs, sumSq, max, signal);
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
