package io.anamnesis.format.gguf;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Test-only GGUF byte builder, written from the spec's struct layout: every field is
 * appended by hand, so tests can also build files the spec forbids.
 */
final class GgufBytes {
    // gguf_metadata_value_type ids, straight from the spec
    static final int UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
            BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteOrder order;
    private final int version;

    GgufBytes(ByteOrder order, int version) {
        this.order = order;
        this.version = version;
    }

    /** A little-endian GGUF v3 file. */
    static GgufBytes v3() {
        return new GgufBytes(ByteOrder.LITTLE_ENDIAN, 3);
    }

    /** Magic, version, tensor count and KV count. */
    GgufBytes header(long tensorCount, long kvCount) {
        raw((byte) 'G', (byte) 'G', (byte) 'U', (byte) 'F');
        u32(version);
        count(tensorCount);
        return count(kvCount);
    }

    GgufBytes raw(byte... b) {
        out.writeBytes(b);
        return this;
    }

    private GgufBytes put(int n, java.util.function.Consumer<ByteBuffer> w) {
        ByteBuffer b = ByteBuffer.allocate(n).order(order);
        w.accept(b);
        return raw(b.array());
    }

    GgufBytes u8(int v) { return raw((byte) v); }
    GgufBytes u16(int v) { return put(2, b -> b.putShort((short) v)); }
    GgufBytes u32(long v) { return put(4, b -> b.putInt((int) v)); }
    GgufBytes u64(long v) { return put(8, b -> b.putLong(v)); }
    GgufBytes f32(float v) { return put(4, b -> b.putFloat(v)); }
    GgufBytes f64(double v) { return put(8, b -> b.putDouble(v)); }

    /** A count or length: uint64, uint32 in v1. */
    GgufBytes count(long v) {
        return version == 1 ? u32(v) : u64(v);
    }

    GgufBytes str(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        count(b.length);
        return raw(b);
    }

    /** A KV's key and type; the caller appends the value. */
    GgufBytes key(String key, int type) {
        str(key);
        return u32(type);
    }

    /** Array header: element type and length; the caller appends the elements. */
    GgufBytes array(int elementType, long length) {
        u32(elementType);
        return count(length);
    }

    GgufBytes tensor(String name, long[] ne, int type, long offset) {
        str(name);
        u32(ne.length);
        for (long d : ne) count(d);
        u32(type);
        return u64(offset);
    }

    /** Zero bytes up to the next multiple of {@code alignment}. */
    GgufBytes pad(int alignment) {
        while (out.size() % alignment != 0) out.write(0);
        return this;
    }

    int size() {
        return out.size();
    }

    byte[] bytes() {
        return out.toByteArray();
    }

    Path write(Path dir, String name) {
        try {
            return Files.write(dir.resolve(name), bytes());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
