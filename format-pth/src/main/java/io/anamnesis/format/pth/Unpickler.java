package io.anamnesis.format.pth;

import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.SecurityViolationException;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.format.pth.PyValue.Bytes;
import io.anamnesis.format.pth.PyValue.Container;
import io.anamnesis.format.pth.PyValue.Global;
import io.anamnesis.format.pth.PyValue.None;
import io.anamnesis.format.pth.PyValue.PyDict;
import io.anamnesis.format.pth.PyValue.PyList;
import io.anamnesis.format.pth.PyValue.PyTuple;
import io.anamnesis.format.pth.PyValue.Storage;
import io.anamnesis.format.pth.PyValue.Tensor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static io.anamnesis.format.pth.Opcodes.*;

/**
 * A pickle virtual machine for the opcodes of protocols 2 to 5 that torch.save emits, written
 * from the opcode descriptions of CPython's pickletools. It never imports or calls anything:
 * a GLOBAL outside {@link TorchGlobals} stops the run with a {@link SecurityViolationException}
 * the moment it is read, and REDUCE on an allowed callable builds a {@link PyValue}
 * description. The machine is iterative (an explicit stack, no recursion) and charges every
 * value, memo slot, string, mark and level of container nesting against {@link ParseLimits}
 * before allocating.
 *
 * <p>One instance reads one stream; several pickles in a row (the legacy format) share one
 * {@link #storages} table.
 */
final class Unpickler {
    private static final byte[] NO_BYTES = new byte[0];

    private final ParseLimits limits;
    /** Storages by key, so that every reference to a key is checked to agree. */
    final Map<String, Storage> storages = new LinkedHashMap<>();
    /** Every GLOBAL referenced, in first-seen order, as {@code module.name}. */
    final Set<String> globals = new LinkedHashSet<>();
    int protocol = -1;
    /**
     * What torch.load(weights_only=True) would refuse although it is only data to us (its
     * unpickler BUILDs only tensors, parameters and OrderedDicts): the first such construct.
     */
    String weightsOnlyObjection;

    private MemorySegment in;
    private long pos;
    private long end;
    private long values;
    /** Values created over every {@link #load} of this instance. */
    long totalValues;

    Unpickler(ParseLimits limits) {
        this.limits = limits;
    }

    /** The stream position after the last {@link #load}. */
    long position() {
        return pos;
    }

    /**
     * Runs one pickle starting at {@code start}, reading no further than {@code limit}.
     *
     * @return the value STOP leaves on the stack
     */
    Object load(MemorySegment input, long start, long limit) {
        this.in = input;
        this.pos = start;
        this.end = limit;
        this.values = 0;
        List<Object> stack = new ArrayList<>();
        List<Integer> marks = new ArrayList<>();
        Map<Long, Object> memo = new HashMap<>();
        while (true) {
            int op = u8();
            switch (op) {
                case PROTO -> {
                    int v = u8();
                    if (v < 2 || v > 5) throw new UnsupportedFeatureException("pickle protocol " + v + " (supported: 2 to 5)");
                    if (protocol < 0) protocol = v;
                }
                case FRAME -> { // a length prefix we do not need, checked like any length
                    long n = i64();
                    if (n < 0 || n > end - pos) throw malformed("FRAME of " + n + " bytes runs past the pickle");
                }
                case STOP -> {
                    if (stack.size() != 1 || !marks.isEmpty()) {
                        throw malformed("STOP with " + stack.size() + " values and " + marks.size() + " marks on the stack");
                    }
                    return stack.get(0);
                }
                case MARK -> {
                    if (marks.size() >= limits.maxNestingDepth()) {
                        throw new LimitExceededException("pickle MARK nesting is over the limit of " + limits.maxNestingDepth());
                    }
                    marks.add(stack.size());
                }
                case POP -> pop(stack, marks);
                case POP_MARK -> popMark(stack, marks);
                case DUP -> push(stack, peek(stack, marks));
                case NONE -> push(stack, None.INSTANCE);
                case NEWTRUE -> push(stack, Boolean.TRUE);
                case NEWFALSE -> push(stack, Boolean.FALSE);
                case BININT -> push(stack, (long) i32());
                case BININT1 -> push(stack, (long) u8());
                case BININT2 -> push(stack, (long) u16());
                case LONG1 -> push(stack, longFrom(u8()));
                case LONG4 -> {
                    int n = i32();
                    if (n < 0) throw malformed("LONG4 with negative length " + n);
                    push(stack, longFrom(n));
                }
                case BINFLOAT -> push(stack, Double.longBitsToDouble(bigEndianLong()));
                case BINUNICODE -> push(stack, utf8(u32()));
                case SHORT_BINUNICODE -> push(stack, utf8(u8()));
                case BINUNICODE8 -> push(stack, utf8(i64()));
                case BINSTRING -> push(stack, latin1(i32()));
                case SHORT_BINSTRING -> push(stack, latin1(u8()));
                case BINBYTES -> push(stack, new Bytes(bytes(u32())));
                case SHORT_BINBYTES -> push(stack, new Bytes(bytes(u8())));
                case BINBYTES8, BYTEARRAY8 -> push(stack, new Bytes(bytes(i64())));
                case EMPTY_TUPLE -> push(stack, new PyTuple(List.of()));
                case EMPTY_LIST -> push(stack, new PyList());
                case EMPTY_DICT -> push(stack, new PyDict());
                case EMPTY_SET -> push(stack, new PyList());
                case TUPLE -> push(stack, tuple(popMark(stack, marks)));
                case TUPLE1 -> push(stack, tuple(popN(stack, marks, 1)));
                case TUPLE2 -> push(stack, tuple(popN(stack, marks, 2)));
                case TUPLE3 -> push(stack, tuple(popN(stack, marks, 3)));
                case LIST, FROZENSET -> {
                    List<Object> items = popMark(stack, marks);
                    PyList list = new PyList();
                    for (Object o : items) addTo(list, o);
                    push(stack, list);
                }
                case DICT -> {
                    List<Object> items = popMark(stack, marks);
                    PyDict dict = new PyDict();
                    putAll(dict, items);
                    push(stack, dict);
                }
                case APPEND -> {
                    Object item = pop(stack, marks);
                    addTo(asList(peek(stack, marks), "APPEND"), item);
                }
                case APPENDS, ADDITEMS -> {
                    List<Object> items = popMark(stack, marks);
                    PyList list = asList(peek(stack, marks), "APPENDS");
                    for (Object o : items) addTo(list, o);
                }
                case SETITEM -> {
                    Object value = pop(stack, marks);
                    Object key = pop(stack, marks);
                    put(asDict(peek(stack, marks), "SETITEM"), key, value);
                }
                case SETITEMS -> {
                    List<Object> items = popMark(stack, marks);
                    putAll(asDict(peek(stack, marks), "SETITEMS"), items);
                }
                case BINPUT -> memoPut(memo, u8(), peek(stack, marks));
                case LONG_BINPUT -> memoPut(memo, u32(), peek(stack, marks));
                case MEMOIZE -> memoPut(memo, memo.size(), peek(stack, marks));
                case BINGET -> push(stack, memoGet(memo, u8()));
                case LONG_BINGET -> push(stack, memoGet(memo, u32()));
                case GLOBAL -> { // "module\nname\n"
                    String module = line();
                    String name = line();
                    push(stack, global(module, name));
                }
                case STACK_GLOBAL -> {
                    Object name = pop(stack, marks);
                    Object module = pop(stack, marks);
                    if (!(module instanceof String m) || !(name instanceof String n)) {
                        throw malformed("STACK_GLOBAL needs two strings, got " + kind(module) + " and " + kind(name));
                    }
                    push(stack, global(m, n));
                }
                case REDUCE -> {
                    Object args = pop(stack, marks);
                    Object fn = pop(stack, marks);
                    push(stack, call(fn, args));
                }
                case NEWOBJ -> { // cls.__new__(cls, *args), for allowlisted classes only
                    Object args = pop(stack, marks);
                    Object cls = pop(stack, marks);
                    push(stack, call(cls, args));
                }
                case NEWOBJ_EX -> {
                    Object kwargs = pop(stack, marks);
                    Object args = pop(stack, marks);
                    Object cls = pop(stack, marks);
                    if (!(kwargs instanceof PyDict d) || !d.keys.isEmpty()) {
                        throw new UnsupportedFeatureException("NEWOBJ_EX with keyword arguments");
                    }
                    push(stack, call(cls, args));
                }
                case BUILD -> {
                    Object state = pop(stack, marks);
                    Object target = peek(stack, marks);
                    build(target, state);
                    if (target instanceof PyDict d && !d.ordered && weightsOnlyObjection == null) {
                        weightsOnlyObjection = "BUILD on a plain dict";
                    }
                }
                case BINPERSID -> push(stack, persistent(pop(stack, marks)));
                case EXT1, EXT2, EXT4 -> throw new SecurityViolationException(
                        "pickle uses the copyreg extension registry (EXT opcodes), which names code by number; "
                                + "torch.load(weights_only=True) would reject it");
                case INST -> { // a class by name, like GLOBAL, then a call
                    String module = line();
                    String name = line();
                    Global g = global(module, name);
                    push(stack, call(g, tuple(popMark(stack, marks))));
                }
                case OBJ -> {
                    List<Object> items = popMark(stack, marks);
                    if (items.isEmpty()) throw malformed("OBJ without a class");
                    push(stack, call(items.get(0), tuple(new ArrayList<>(items.subList(1, items.size())))));
                }
                case NEXT_BUFFER, READONLY_BUFFER -> throw new UnsupportedFeatureException("pickle protocol 5 out-of-band buffers");
                case PERSID, FLOAT, INT, LONG, STRING, UNICODE, GET, PUT -> throw new UnsupportedFeatureException(
                        String.format("text pickle opcode 0x%02x of protocol 0 (torch.save writes protocol 2 and up)", op));
                default -> throw malformed(String.format("unknown pickle opcode 0x%02x at offset %d", op, pos - 1));
            }
        }
    }

    // ---------------------------------------------------------------- stack and memo

    private void push(List<Object> stack, Object v) {
        totalValues++;
        if (++values > limits.maxPickleValues()) {
            throw new LimitExceededException("pickle creates more than " + limits.maxPickleValues() + " values");
        }
        stack.add(v);
    }

    private static Object pop(List<Object> stack, List<Integer> marks) {
        int floor = marks.isEmpty() ? 0 : marks.get(marks.size() - 1);
        if (stack.size() <= floor) throw malformed("pickle stack underflow");
        return stack.remove(stack.size() - 1);
    }

    private static Object peek(List<Object> stack, List<Integer> marks) {
        int floor = marks.isEmpty() ? 0 : marks.get(marks.size() - 1);
        if (stack.size() <= floor) throw malformed("pickle stack underflow");
        return stack.get(stack.size() - 1);
    }

    private static List<Object> popN(List<Object> stack, List<Integer> marks, int n) {
        int floor = marks.isEmpty() ? 0 : marks.get(marks.size() - 1);
        if (stack.size() - floor < n) throw malformed("pickle stack underflow");
        List<Object> top = stack.subList(stack.size() - n, stack.size());
        List<Object> items = new ArrayList<>(top);
        top.clear();
        return items;
    }

    private static List<Object> popMark(List<Object> stack, List<Integer> marks) {
        if (marks.isEmpty()) throw malformed("pickle pops to a MARK that was never set");
        int at = marks.remove(marks.size() - 1);
        List<Object> top = stack.subList(at, stack.size());
        List<Object> items = new ArrayList<>(top);
        top.clear();
        return items;
    }

    private void memoPut(Map<Long, Object> memo, long index, Object v) {
        if (index < 0) throw malformed("negative memo index " + index);
        if (!memo.containsKey(index) && memo.size() >= limits.maxPickleValues()) {
            throw new LimitExceededException("pickle memo is over the limit of " + limits.maxPickleValues() + " entries");
        }
        memo.put(index, v);
    }

    private static Object memoGet(Map<Long, Object> memo, long index) {
        Object v = memo.get(index);
        if (v == null) throw malformed("pickle reads memo slot " + index + ", which was never written");
        return v;
    }

    // ---------------------------------------------------------------- containers, charged for depth

    private PyTuple tuple(List<Object> items) {
        PyTuple t = new PyTuple(items);
        for (Object o : items) deepen(t, o);
        return t;
    }

    private void addTo(PyList list, Object item) {
        deepen(list, item);
        list.items.add(item);
    }

    private void put(PyDict dict, Object key, Object value) {
        deepen(dict, key);
        deepen(dict, value);
        dict.keys.add(key);
        dict.values.add(value);
    }

    private void putAll(PyDict dict, List<Object> items) {
        if (items.size() % 2 != 0) throw malformed("SETITEMS/DICT with an odd number of items");
        for (int i = 0; i < items.size(); i += 2) put(dict, items.get(i), items.get(i + 1));
    }

    /**
     * Charges nesting as it happens. A child mutated after being added is not re-charged
     * here; {@link Checkpoint}'s walk bounds depth again for that case.
     */
    private void deepen(Container parent, Object child) {
        int d = PyValue.depthOf(child) + 1;
        if (d > parent.depth) {
            if (d > limits.maxNestingDepth()) {
                throw new LimitExceededException("pickle nesting is deeper than the limit of " + limits.maxNestingDepth());
            }
            parent.depth = d;
        }
    }

    private static PyList asList(Object o, String op) {
        if (o instanceof PyList l) return l;
        throw malformed(op + " on a " + kind(o) + ", not a list");
    }

    private static PyDict asDict(Object o, String op) {
        if (o instanceof PyDict d) return d;
        throw malformed(op + " on a " + kind(o) + ", not a dict");
    }

    // ---------------------------------------------------------------- globals and calls

    private Global global(String module, String name) {
        String m = TorchGlobals.canonicalModule(module);
        globals.add(m + "." + name);
        if (!TorchGlobals.allowed(m, name)) {
            throw new SecurityViolationException("pickle references GLOBAL " + m + "." + name
                    + ", which is outside the allowlist of torch.load(weights_only=True); nothing was executed");
        }
        return new Global(m, name);
    }

    private Object call(Object fn, Object argsValue) {
        if (!(fn instanceof Global g)) throw malformed("REDUCE/NEWOBJ calls a " + kind(fn) + ", not an allowed global");
        if (!(argsValue instanceof PyTuple t)) throw malformed("REDUCE/NEWOBJ arguments are a " + kind(argsValue) + ", not a tuple");
        List<Object> a = t.items;
        String q = g.qualified();
        return switch (q) {
            case "collections.OrderedDict", "collections.Counter" -> {
                PyDict d = new PyDict();
                d.ordered = true;
                if (a.size() == 1 && a.get(0) instanceof PyList pairs) {
                    for (Object p : pairs.items) {
                        if (!(p instanceof Container c) || items(c).size() != 2) throw malformed(q + " of a non-pair");
                        put(d, items(c).get(0), items(c).get(1));
                    }
                } else if (!a.isEmpty()) {
                    throw malformed(q + " with " + a.size() + " arguments");
                }
                yield d;
            }
            case "builtins.set" -> {
                PyList s = new PyList();
                if (a.size() == 1 && a.get(0) instanceof Container c) {
                    for (Object o : items(c)) addTo(s, o);
                } else if (!a.isEmpty()) {
                    throw malformed("set() of " + a.size() + " arguments");
                }
                yield s;
            }
            case "torch.Size" -> {
                if (a.size() != 1 || !(a.get(0) instanceof Container c)) throw malformed("torch.Size of a non-sequence");
                yield tuple(new ArrayList<>(items(c)));
            }
            case "torch.device" -> {
                if (a.isEmpty() || !(a.get(0) instanceof String s)) throw malformed("torch.device without a name");
                yield a.size() > 1 && a.get(1) instanceof Long idx ? s + ":" + idx : s;
            }
            case "torch.serialization._get_layout" -> {
                if (a.size() != 1 || !(a.get(0) instanceof String s)) throw malformed("_get_layout without a name");
                yield s;
            }
            case "_codecs.encode" -> {
                // How protocol 2 pickles bytes: encode(str, 'latin1').
                if (a.isEmpty() || !(a.get(0) instanceof String s)) throw malformed("_codecs.encode of a non-string");
                String enc = a.size() > 1 && a.get(1) instanceof String e ? e : "utf-8";
                yield new Bytes(enc.equalsIgnoreCase("latin1") || enc.equalsIgnoreCase("latin-1")
                        ? s.getBytes(StandardCharsets.ISO_8859_1) : s.getBytes(StandardCharsets.UTF_8));
            }
            case "builtins.bytearray" -> a.isEmpty() ? new Bytes(NO_BYTES)
                    : a.get(0) instanceof Bytes b ? b : failMalformed("bytearray of a " + kind(a.get(0)));
            case "builtins.complex" -> "complex" + a;
            case TorchGlobals.REBUILD_TENSOR, TorchGlobals.REBUILD_TENSOR_V2 -> tensor(a, null);
            case TorchGlobals.REBUILD_TENSOR_V3 -> {
                if (a.size() < 7 || !(a.get(6) instanceof Global dt) || !TorchGlobals.isDType(dt)) {
                    throw malformed("_rebuild_tensor_v3 without a dtype");
                }
                yield tensor(a, dt);
            }
            case TorchGlobals.REBUILD_PARAMETER, TorchGlobals.REBUILD_PARAMETER_WITH_STATE -> {
                if (a.isEmpty()) throw malformed(q + " without data");
                Object data = a.get(0);
                if (!(data instanceof Tensor) && !(data instanceof PyValue.Unsupported)) {
                    throw malformed(q + " of a " + kind(data));
                }
                yield data;
            }
            case TorchGlobals.REBUILD_FROM_TYPE_V2 -> {
                // (func, new_type, args, state): the tensor func(*args) builds; the subclass
                // type and its Python state carry no tensor data.
                if (a.size() < 3 || !(a.get(0) instanceof Global inner) || !(a.get(2) instanceof PyTuple innerArgs)
                        || inner.qualified().equals(TorchGlobals.REBUILD_FROM_TYPE_V2)) {
                    throw malformed("_rebuild_from_type_v2 with unexpected arguments");
                }
                yield call(inner, innerArgs);
            }
            case "torch._utils._rebuild_qtensor" -> new PyValue.Unsupported("a quantized tensor (_rebuild_qtensor)");
            case "torch._utils._rebuild_sparse_tensor" -> new PyValue.Unsupported("a sparse tensor");
            case "torch._utils._rebuild_meta_tensor_no_storage" -> new PyValue.Unsupported("a meta tensor without storage");
            case "torch._utils._rebuild_wrapper_subclass" -> new PyValue.Unsupported("a tensor wrapper subclass");
            case "torch._utils._rebuild_device_tensor_from_numpy", "torch._utils._rebuild_device_tensor_from_cpu_tensor" ->
                    new PyValue.Unsupported("a tensor rebuilt from a numpy array or CPU tensor");
            default -> throw new UnsupportedFeatureException("pickle calls " + q
                    + ", which torch.load(weights_only=True) allows but this reader does not build");
        };
    }

    private static Object failMalformed(String message) {
        throw malformed(message);
    }

    private Object tensor(List<Object> a, Global v3dtype) {
        if (a.size() < 4) throw malformed("_rebuild_tensor with " + a.size() + " arguments");
        if (!(a.get(0) instanceof Storage storage)) throw malformed("_rebuild_tensor of a " + kind(a.get(0)) + ", not a storage");
        long offset = nonNegative(a.get(1), "storage offset");
        long[] sizes = longs(a.get(2), "size");
        long[] strides = longs(a.get(3), "stride");
        if (sizes.length != strides.length) {
            throw malformed("tensor size " + Arrays.toString(sizes) + " and stride " + Arrays.toString(strides) + " differ in rank");
        }
        if (sizes.length > limits.maxRank()) {
            throw new LimitExceededException("tensor rank " + sizes.length + " is over the limit of " + limits.maxRank());
        }
        if (v3dtype != null) {
            var dt = TorchGlobals.dtype(v3dtype);
            if (dt.isEmpty()) return new PyValue.Unsupported("dtype " + v3dtype.qualified());
            if (!dt.get().equals(storage.dtype())) {
                // An untyped (byte) storage viewed as dtype: element counts follow the new size.
                if (storage.dtype() == null || !storage.dtype().equals(DType.U8)) {
                    throw malformed("_rebuild_tensor_v3 dtype " + v3dtype.qualified() + " over a " + storage.typeName());
                }
                int es = dt.get().elementBytes();
                if (storage.numel() % es != 0) throw malformed("byte storage " + storage.key() + " is not a whole number of " + dt.get());
                storage = new Storage(storage.key(), dt.get(), storage.typeName(), storage.numel() / es, storage.location());
            }
        }
        if (storage.dtype() == null) return new PyValue.Unsupported("storage type " + storage.typeName());
        return new Tensor(storage, offset, sizes, strides);
    }

    private Storage persistent(Object pid) {
        if (!(pid instanceof PyTuple t) || t.items.size() < 5 || !"storage".equals(t.items.get(0))) {
            throw malformed("persistent id " + kind(pid) + " is not a ('storage', type, key, location, numel) tuple");
        }
        List<Object> a = t.items;
        if (!(a.get(1) instanceof Global type) || !(a.get(2) instanceof String key) || !(a.get(3) instanceof String location)) {
            throw malformed("persistent id with a malformed storage type, key or location");
        }
        long numel = nonNegative(a.get(4), "storage size");
        if (a.size() > 5 && a.get(5) != None.INSTANCE) {
            throw new UnsupportedFeatureException("legacy storage views (view_metadata in a persistent id) of storage " + key);
        }
        DType dtype;
        if (TorchGlobals.isStorageType(type)) {
            dtype = TorchGlobals.storageDType(type).orElse(null);
        } else if (type.qualified().equals("torch.UntypedStorage") || type.qualified().equals("torch.storage.UntypedStorage")) {
            dtype = DType.U8;
        } else if (TorchGlobals.isDType(type)) {
            // Newer torch names the dtype object itself for dtypes without a legacy class.
            dtype = TorchGlobals.dtype(type).orElse(null);
        } else {
            throw malformed("persistent id names " + type.qualified() + ", not a storage type");
        }
        if (dtype != null) {
            long bytes;
            try {
                bytes = Math.multiplyExact(numel, (long) dtype.elementBytes());
            } catch (ArithmeticException e) {
                throw new LimitExceededException("storage " + key + " declares " + numel + " elements, which overflows a byte count");
            }
            if (bytes > limits.maxInflatedBytes()) {
                throw new LimitExceededException("storage " + key + " declares " + bytes
                        + " bytes, over the per-record limit of " + limits.maxInflatedBytes());
            }
        }
        Storage s = new Storage(key, dtype, type.name(), numel, location);
        Storage earlier = storages.putIfAbsent(key, s);
        if (earlier != null) {
            if (!earlier.typeName().equals(s.typeName()) || earlier.numel() != s.numel()) {
                throw malformed("storage " + key + " is declared twice, as " + earlier.typeName() + "[" + earlier.numel()
                        + "] and " + s.typeName() + "[" + s.numel() + "]");
            }
            return earlier;
        }
        if (storages.size() > limits.maxTensors()) {
            throw new LimitExceededException("pickle declares more than " + limits.maxTensors() + " storages");
        }
        return s;
    }

    private static void build(Object target, Object state) {
        // OrderedDict state is its __dict__ (a state_dict's _metadata); a tensor's is Python
        // attributes or hooks. Neither holds tensor data; anything else is not a checkpoint.
        if (target instanceof PyDict || target instanceof Tensor || target instanceof PyValue.Unsupported) return;
        throw malformed("BUILD on a " + kind(target));
    }

    private static List<Object> items(Container c) {
        return switch (c) {
            case PyList l -> l.items;
            case PyTuple t -> t.items;
            case PyDict d -> d.keys;
        };
    }

    private static long nonNegative(Object o, String what) {
        if (o instanceof Long l) {
            if (l < 0) throw malformed(what + " is negative: " + l);
            return l;
        }
        if (o instanceof BigInteger b) {
            if (b.signum() < 0) throw malformed(what + " is negative: " + b);
            throw new LimitExceededException(what + " " + b + " does not fit in 63 bits");
        }
        throw malformed(what + " is a " + kind(o) + ", not an int");
    }

    private static long[] longs(Object o, String what) {
        if (!(o instanceof PyTuple t)) throw malformed("tensor " + what + " is a " + kind(o) + ", not a tuple");
        long[] out = new long[t.items.size()];
        for (int i = 0; i < out.length; i++) out[i] = nonNegative(t.items.get(i), what);
        return out;
    }

    static String kind(Object o) {
        return switch (o) {
            case null -> "nothing";
            case String s -> "str";
            case Long l -> "int";
            case BigInteger b -> "int";
            case Double d -> "float";
            case Boolean b -> "bool";
            case None n -> "None";
            case Bytes b -> "bytes";
            case PyList l -> "list";
            case PyTuple t -> "tuple";
            case PyDict d -> "dict";
            case Global g -> "global " + g.qualified();
            case Storage s -> "storage";
            case Tensor t -> "tensor";
            case PyValue.Unsupported u -> "unsupported tensor";
            default -> o.getClass().getSimpleName();
        };
    }

    // ---------------------------------------------------------------- bytes

    private void need(long n) {
        if (n < 0 || n > end - pos) throw malformed("pickle is truncated: needs " + n + " bytes at offset " + pos
                + ", " + (end - pos) + " remain");
    }

    private int u8() {
        need(1);
        return in.get(ValueLayout.JAVA_BYTE, pos++) & 0xFF;
    }

    private int u16() {
        need(2);
        int v = in.get(LE_SHORT, pos) & 0xFFFF;
        pos += 2;
        return v;
    }

    private int i32() {
        need(4);
        int v = in.get(LE_INT, pos);
        pos += 4;
        return v;
    }

    private long u32() {
        return i32() & 0xFFFF_FFFFL;
    }

    private long i64() {
        need(8);
        long v = in.get(LE_LONG, pos);
        pos += 8;
        return v;
    }

    private long bigEndianLong() {
        need(8);
        long v = in.get(BE_LONG, pos);
        pos += 8;
        return v;
    }

    private byte[] bytes(long n) {
        if (n < 0 || n > limits.maxStringBytes()) {
            throw new LimitExceededException("pickle string of " + Long.toUnsignedString(n) + " bytes is over the limit of "
                    + limits.maxStringBytes());
        }
        need(n);
        byte[] b = in.asSlice(pos, n).toArray(ValueLayout.JAVA_BYTE);
        pos += n;
        return b;
    }

    private String utf8(long n) {
        byte[] b = bytes(n);
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            throw malformed("pickle string is not valid UTF-8");
        }
    }

    private String latin1(long n) {
        if (n < 0) throw malformed("BINSTRING with negative length " + n);
        return new String(bytes(n), StandardCharsets.ISO_8859_1);
    }

    /** A GLOBAL operand: bytes up to a newline, bounded by the string limit. */
    private String line() {
        long max = Math.min(end - pos, limits.maxStringBytes() + 1);
        for (long i = 0; i < max; i++) {
            if (in.get(ValueLayout.JAVA_BYTE, pos + i) == '\n') {
                String s = utf8(i);
                pos++;
                return s;
            }
        }
        if (max > limits.maxStringBytes()) throw new LimitExceededException("GLOBAL name is over the string limit");
        throw malformed("pickle is truncated inside a GLOBAL");
    }

    /** LONG1/LONG4: little-endian two's complement of n bytes. */
    private Object longFrom(long n) {
        byte[] le = bytes(n);
        if (le.length == 0) return 0L;
        byte[] be = new byte[le.length];
        for (int i = 0; i < le.length; i++) be[i] = le[le.length - 1 - i];
        BigInteger v = new BigInteger(be);
        return v.bitLength() < 64 ? (Object) v.longValue() : v;
    }

    private static MalformedFileException malformed(String message) {
        return new MalformedFileException(message);
    }

    private static final ValueLayout.OfShort LE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong BE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
}
