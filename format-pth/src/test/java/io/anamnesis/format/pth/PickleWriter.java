package io.anamnesis.format.pth;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Writes pickle opcodes byte by byte (opcode values from CPython's pickletools), so tests
 * build exactly the streams they mean, hostile ones included. Fluent; {@link #bytes()} ends it.
 */
final class PickleWriter {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    static PickleWriter proto(int version) {
        PickleWriter w = new PickleWriter();
        w.op(0x80).raw(version);
        return w;
    }

    PickleWriter op(int opcode) {
        out.write(opcode);
        return this;
    }

    PickleWriter raw(int... bytes) {
        for (int b : bytes) out.write(b);
        return this;
    }

    PickleWriter raw(byte[] bytes) {
        out.writeBytes(bytes);
        return this;
    }

    PickleWriter le(long value, int width) {
        for (int i = 0; i < width; i++) out.write((int) (value >>> (8 * i)));
        return this;
    }

    byte[] bytes() {
        return out.toByteArray();
    }

    int size() {
        return out.size();
    }

    // ---------------------------------------------------------------- opcodes

    PickleWriter mark() { return op('('); }
    PickleWriter stop() { return op('.'); }
    PickleWriter none() { return op('N'); }
    PickleWriter newTrue() { return op(0x88); }
    PickleWriter newFalse() { return op(0x89); }
    PickleWriter emptyTuple() { return op(')'); }
    PickleWriter emptyList() { return op(']'); }
    PickleWriter emptyDict() { return op('}'); }
    PickleWriter tuple() { return op('t'); }
    PickleWriter tuple1() { return op(0x85); }
    PickleWriter tuple2() { return op(0x86); }
    PickleWriter tuple3() { return op(0x87); }
    PickleWriter list() { return op('l'); }
    PickleWriter dict() { return op('d'); }
    PickleWriter append() { return op('a'); }
    PickleWriter appends() { return op('e'); }
    PickleWriter setItem() { return op('s'); }
    PickleWriter setItems() { return op('u'); }
    PickleWriter reduce() { return op('R'); }
    PickleWriter build() { return op('b'); }
    PickleWriter newObj() { return op(0x81); }
    PickleWriter binPersId() { return op('Q'); }
    PickleWriter stackGlobal() { return op(0x93); }
    PickleWriter memoize() { return op(0x94); }

    PickleWriter binPut(int i) { return op('q').raw(i); }
    PickleWriter longBinPut(long i) { return op('r').le(i, 4); }
    PickleWriter binGet(int i) { return op('h').raw(i); }
    PickleWriter longBinGet(long i) { return op('j').le(i, 4); }

    PickleWriter frame(long length) { return op(0x95).le(length, 8); }

    /** The smallest int opcode that holds {@code v}, as pickle does. */
    PickleWriter integer(long v) {
        if (v >= 0 && v < 256) return op('K').raw((int) v);
        if (v >= 0 && v < 65536) return op('M').le(v, 2);
        if (v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE) return op('J').le(v, 4);
        return op(0x8a).raw(8).le(v, 8);
    }

    PickleWriter binFloat(double v) {
        ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.BIG_ENDIAN).putDouble(v);
        return op('G').raw(b.array());
    }

    PickleWriter unicode(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        return op('X').le(b.length, 4).raw(b);
    }

    PickleWriter shortUnicode(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        return op(0x8c).raw(b.length).raw(b);
    }

    PickleWriter global(String module, String name) {
        return op('c').raw((module + "\n" + name + "\n").getBytes(StandardCharsets.UTF_8));
    }

    // ---------------------------------------------------------------- torch idioms

    /** {@code collections.OrderedDict()}, as torch.save starts a state_dict. */
    PickleWriter orderedDict() {
        return global("collections", "OrderedDict").emptyTuple().reduce();
    }

    /**
     * {@code _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())} with the
     * persistent id {@code ('storage', torch.<type>, key, 'cpu', numel)}, as torch.save writes it.
     */
    PickleWriter tensor(String storageType, String key, long numel, long offset, long[] size, long[] stride) {
        global("torch._utils", "_rebuild_tensor_v2");
        mark();
        mark().unicode("storage").global("torch", storageType).unicode(key).unicode("cpu").integer(numel).tuple();
        binPersId();
        integer(offset);
        longTuple(size);
        longTuple(stride);
        newFalse();
        orderedDict();
        tuple();
        return reduce();
    }

    PickleWriter longTuple(long[] values) {
        mark();
        for (long v : values) integer(v);
        return tuple();
    }

    /** A contiguous tensor over a whole storage of {@code prod(size)} elements. */
    PickleWriter contiguous(String storageType, String key, long... size) {
        long[] stride = new long[size.length];
        long n = 1;
        for (int i = size.length - 1; i >= 0; i--) {
            stride[i] = n;
            n *= size[i];
        }
        return tensor(storageType, key, n, 0, size, stride);
    }
}
