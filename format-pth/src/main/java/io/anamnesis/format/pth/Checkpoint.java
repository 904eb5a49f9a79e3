package io.anamnesis.format.pth;

import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.format.pth.PyValue.Bytes;
import io.anamnesis.format.pth.PyValue.Global;
import io.anamnesis.format.pth.PyValue.None;
import io.anamnesis.format.pth.PyValue.PyDict;
import io.anamnesis.format.pth.PyValue.PyList;
import io.anamnesis.format.pth.PyValue.PyTuple;
import io.anamnesis.format.pth.PyValue.Storage;
import io.anamnesis.format.pth.PyValue.Tensor;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A whole checkpoint's value tree flattened: every tensor under its dotted path
 * ({@code model.layer.weight}, {@code optimizer.state.0.exp_avg}) and every scalar or string
 * as metadata. The walk is iterative and charges each visited node against a
 * {@link #budget} tied to the pickle's own size, so a small pickle that shares one list many times
 * (memo replay) cannot make it visit exponentially many paths, and it re-checks depth, so a
 * container that grew after it was nested (or contains itself) cannot loop.
 */
final class Checkpoint {
    /** One tensor reference found in the tree. */
    record Found(String name, Tensor tensor) {
    }

    final List<Found> tensors = new ArrayList<>();
    final Map<String, String> metadata = new LinkedHashMap<>();
    final Map<String, Object> structured = new LinkedHashMap<>();
    /** The values with a typed form; None, bytes, references to Python code and integers past 64 bits have none. */
    final Map<String, MetaValue> typed = new LinkedHashMap<>();

    private Checkpoint() {
    }

    private record Frame(Object value, String path, int depth) {
    }

    /**
     * How many visits a pickle of {@code created} values may cost: sharing is legitimate
     * (tied weights, a config referenced twice), but a walk that costs more than this
     * multiple of what the pickle built is memo replay amplification.
     */
    static long budget(long created, ParseLimits limits) {
        return Math.min(limits.maxPickleValues(), 16 * created + 1024);
    }

    static Checkpoint walk(Object root, ParseLimits limits, long budget) {
        Checkpoint c = new Checkpoint();
        Set<String> names = new HashSet<>();
        Deque<Frame> todo = new ArrayDeque<>();
        todo.push(new Frame(root, "", 0));
        long visits = 0;
        while (!todo.isEmpty()) {
            Frame f = todo.pop();
            if (++visits > budget) {
                throw new LimitExceededException("walking the checkpoint visits more than " + budget
                        + " values, over 16 times what its pickle built (shared containers replayed from the memo)");
            }
            if (f.depth > limits.maxNestingDepth()) {
                throw new LimitExceededException("checkpoint nesting is deeper than the limit of " + limits.maxNestingDepth());
            }
            String path = f.path;
            switch (f.value) {
                case PyDict d -> {
                    // Pushed in reverse so that the stack pops them in file order.
                    for (int i = d.keys.size() - 1; i >= 0; i--) {
                        todo.push(new Frame(d.values.get(i), join(path, component(d.keys.get(i), i)), f.depth + 1));
                    }
                }
                case PyList l -> {
                    for (int i = l.items.size() - 1; i >= 0; i--) {
                        todo.push(new Frame(l.items.get(i), join(path, Integer.toString(i)), f.depth + 1));
                    }
                }
                case PyTuple t -> {
                    for (int i = t.items.size() - 1; i >= 0; i--) {
                        todo.push(new Frame(t.items.get(i), join(path, Integer.toString(i)), f.depth + 1));
                    }
                }
                case Tensor t -> c.addTensor(names, name(path), t, limits);
                case Storage s -> c.addTensor(names, name(path),
                        new Tensor(s, 0, new long[]{s.numel()}, new long[]{1}), limits);
                case PyValue.Unsupported u -> throw UnsupportedFeatureException.inTensor(name(path), u.what() + " is not supported");
                case String s -> c.addMeta(path, s, s, new MetaValue.Str(s), limits);
                case Long v -> c.addMeta(path, v.toString(), v, new MetaValue.Int(MetaValue.Type.I64, v), limits);
                case BigInteger v -> c.addMeta(path, v.toString(), v.toString(),
                        v.signum() >= 0 && v.bitLength() <= 64 ? new MetaValue.Int(MetaValue.Type.U64, v.longValue()) : null, limits);
                case Double v -> c.addMeta(path, pythonRepr(v), v, new MetaValue.Real(MetaValue.Type.F64, v), limits);
                case Boolean v -> c.addMeta(path, v ? "True" : "False", v, new MetaValue.Bool(v), limits);
                case None n -> c.addMeta(path, "None", "None", null, limits);
                case Bytes b -> c.addMeta(path, "<" + b.value().length + " bytes>", "<" + b.value().length + " bytes>", null, limits);
                case Global g -> c.addMeta(path, g.qualified(), g.qualified(), null, limits);
                default -> throw new MalformedFileException("unexpected value " + Unpickler.kind(f.value) + " at " + name(path));
            }
        }
        return c;
    }

    private void addTensor(Set<String> names, String name, Tensor t, ParseLimits limits) {
        if (!names.add(name)) throw MalformedFileException.inTensor(name, "two values of the checkpoint have this name");
        if (tensors.size() >= limits.maxTensors()) {
            throw new LimitExceededException("checkpoint holds more than " + limits.maxTensors() + " tensors");
        }
        tensors.add(new Found(name, t));
    }

    private void addMeta(String path, String text, Object value, MetaValue typedValue, ParseLimits limits) {
        if (metadata.size() >= limits.maxMetadataEntries()) {
            throw new LimitExceededException("checkpoint holds more than " + limits.maxMetadataEntries() + " non-tensor values");
        }
        metadata.put(path, text);
        structured.put(path, value);
        if (typedValue != null) typed.put(path, typedValue);
    }

    /** A checkpoint that is one bare tensor has no path; it is called "tensor". */
    private static String name(String path) {
        return path.isEmpty() ? "tensor" : path;
    }

    private static String join(String path, String component) {
        return path.isEmpty() ? component : path + "." + component;
    }

    private static String component(Object key, int index) {
        return switch (key) {
            case String s -> s;
            case Long l -> l.toString();
            case BigInteger b -> b.toString();
            case Boolean b -> b ? "True" : "False";
            case Double d -> pythonRepr(d);
            case None n -> "None";
            default -> "<" + Unpickler.kind(key) + " key " + index + ">";
        };
    }

    /** A float as Python's repr prints it: shortest round-trip digits, 1e-08 not 1.0E-8. */
    static String pythonRepr(double v) {
        if (Double.isNaN(v)) return "nan";
        if (Double.isInfinite(v)) return v > 0 ? "inf" : "-inf";
        if (v == 0) return (1 / v < 0) ? "-0.0" : "0.0";
        BigDecimal d = new BigDecimal(Double.toString(Math.abs(v))).stripTrailingZeros();
        String digits = d.unscaledValue().toString();
        int exp = digits.length() - 1 - d.scale();
        String sign = v < 0 ? "-" : "";
        if (exp >= -4 && exp < 16) {
            String plain = d.toPlainString();
            return sign + (plain.contains(".") ? plain : plain + ".0");
        }
        String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
        return sign + mantissa + "e" + (exp < 0 ? "-" : "+") + (Math.abs(exp) < 10 ? "0" : "") + Math.abs(exp);
    }
}
