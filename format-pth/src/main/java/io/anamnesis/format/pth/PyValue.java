package io.anamnesis.format.pth;

import io.anamnesis.api.DType;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;

/**
 * What the {@link Unpickler} builds: plain data, never live objects. Python scalars map to
 * {@link String}, {@link Long}, {@link BigInteger}, {@link Double}, {@link Boolean} and
 * {@link None}; containers carry their nesting depth so that depth is charged as they grow,
 * not discovered later by recursion.
 */
sealed interface PyValue {

    /** Python's None. */
    enum None implements PyValue {
        INSTANCE
    }

    /** A bytes or bytearray value. */
    record Bytes(byte[] value) implements PyValue {
    }

    /** A GLOBAL that passed the allowlist: a name, not a loaded class. */
    record Global(String module, String name) implements PyValue {
        String qualified() {
            return module + "." + name;
        }
    }

    /** A container; {@code depth} is 1 + the deepest child's depth seen so far. */
    abstract sealed class Container implements PyValue permits PyList, PyTuple, PyDict {
        int depth = 1;
    }

    /** list, set or frozenset (all walked the same way). */
    final class PyList extends Container {
        final List<Object> items = new ArrayList<>();
    }

    final class PyTuple extends Container {
        final List<Object> items;

        PyTuple(List<Object> items) {
            this.items = items;
        }
    }

    /** dict, OrderedDict or Counter, in insertion order. */
    final class PyDict extends Container {
        /** Built by OrderedDict or Counter, not by EMPTY_DICT/DICT (torch only BUILDs those). */
        boolean ordered;
        final List<Object> keys = new ArrayList<>();
        final List<Object> values = new ArrayList<>();
    }

    /**
     * A storage as torch's persistent id names it: {@code ('storage', type, key, location,
     * numel)}. Several tensors may refer to the same key (tied weights).
     */
    record Storage(String key, DType dtype, String typeName, long numel, String location) implements PyValue {
    }

    /**
     * A tensor as {@code _rebuild_tensor_v2} describes it: a view of a storage, in elements.
     */
    record Tensor(Storage storage, long offset, long[] sizes, long[] strides) implements PyValue {
    }

    /** A tensor the allowlist admits but this reader does not decode (quantized, sparse, ...). */
    record Unsupported(String what) implements PyValue {
    }

    static int depthOf(Object v) {
        return v instanceof Container c ? c.depth : 0;
    }
}
