package io.anamnesis.format.gguf;

import io.anamnesis.api.numeric.LittleEndian;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.AbstractList;
import java.util.RandomAccess;

/**
 * Read-only lists over the raw bytes of a metadata array, so a 150 000-entry vocabulary
 * costs one byte array instead of 150 000 objects, and a writer can copy the bytes verbatim.
 * Elements are decoded on access to the same Java values {@link GgufValue} documents.
 */
final class CompactLists {
    private CompactLists() {
    }

    /** Fixed-size elements, stored little-endian back to back. */
    static final class Numbers extends AbstractList<Object> implements RandomAccess {
        final GgufValueType type;
        final byte[] raw;
        private final MemorySegment seg;

        Numbers(GgufValueType type, byte[] littleEndian) {
            this.type = type;
            this.raw = littleEndian;
            this.seg = MemorySegment.ofArray(littleEndian);
        }

        @Override
        public Object get(int i) {
            long at = (long) java.util.Objects.checkIndex(i, size()) * type.size;
            return switch (type) {
                case UINT8 -> (long) (seg.get(ValueLayout.JAVA_BYTE, at) & 0xFF);
                case INT8 -> (long) seg.get(ValueLayout.JAVA_BYTE, at);
                case UINT16 -> (long) seg.get(LittleEndian.U16, at);
                case INT16 -> (long) seg.get(LittleEndian.I16, at);
                case UINT32 -> seg.get(LittleEndian.I32, at) & 0xFFFF_FFFFL;
                case INT32 -> (long) seg.get(LittleEndian.I32, at);
                case UINT64, INT64 -> seg.get(LittleEndian.I64, at);
                case FLOAT32 -> seg.get(LittleEndian.F32, at);
                case FLOAT64 -> seg.get(LittleEndian.F64, at);
                case BOOL -> seg.get(ValueLayout.JAVA_BYTE, at) != 0;
                case STRING, ARRAY -> throw new IllegalStateException(type + " is not fixed-size");
            };
        }

        @Override
        public int size() {
            return raw.length / type.size;
        }
    }

    /** UTF-8 strings, concatenated in {@code blob}; string i spans {@code [ends[i-1], ends[i])}. */
    static final class Strings extends AbstractList<Object> implements RandomAccess {
        final byte[] blob;
        final int[] ends;
        private final int size;

        Strings(byte[] blob, int[] ends, int size) {
            this.blob = blob;
            this.ends = ends;
            this.size = size;
        }

        int start(int i) {
            return i == 0 ? 0 : ends[i - 1];
        }

        @Override
        public Object get(int i) {
            java.util.Objects.checkIndex(i, size);
            int s = start(i);
            return new String(blob, s, ends[i] - s, StandardCharsets.UTF_8);
        }

        @Override
        public int size() {
            return size;
        }
    }
}
