package io.anamnesis.format.gguf;

import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.UnsupportedFeatureException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Set;

/**
 * Parses a GGUF header (v1, v2, v3; either byte order) through a small buffer over a
 * {@link FileChannel}. Every count and length is checked against the {@link ParseLimits}
 * and against the bytes left in the file before anything is allocated for it.
 */
final class GgufParser {
    static final int BUFFER_BYTES = 1 << 16;

    private final FileChannel channel;
    private final long fileSize;
    private final ParseLimits limits;
    private final ByteBuffer buf = ByteBuffer.allocate(BUFFER_BYTES);
    private long bufStart;       // file offset of buf[0]
    private boolean v1;          // GGUF v1: counts and lengths are uint32

    private GgufParser(FileChannel channel, long fileSize, ParseLimits limits) {
        this.channel = channel;
        this.fileSize = fileSize;
        this.limits = limits;
        buf.flip();
    }

    /** Parses the header of the file open on {@code channel}. */
    static GgufHeader parse(FileChannel channel, long fileSize, ParseLimits limits) throws IOException {
        return new GgufParser(channel, fileSize, limits).header();
    }

    private GgufHeader header() throws IOException {
        need(8, "the GGUF header");
        if (buf.get() != 'G' || buf.get() != 'G' || buf.get() != 'U' || buf.get() != 'F') {
            throw new MalformedFileException("not a GGUF file: the magic is not \"GGUF\"");
        }
        int raw = buf.order(ByteOrder.LITTLE_ENDIAN).getInt();
        // As gguf-py does: a version whose low 16 bits are zero was written big-endian.
        ByteOrder order = (raw & 0xFFFF) == 0 ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN;
        int version = order == ByteOrder.BIG_ENDIAN ? Integer.reverseBytes(raw) : raw;
        buf.order(order);
        if (version < 1 || version > 3) {
            throw new UnsupportedFeatureException("GGUF version " + Integer.toUnsignedString(version)
                    + " is not supported (versions 1 to 3 are)");
        }
        v1 = version == 1;

        long tensorCount = count("tensor count", limits.maxTensors());
        long kvCount = count("metadata key/value count", limits.maxMetadataEntries());
        // The smallest KV is a 1-byte key-length-prefixed empty key, a type and a uint8.
        requireBytes(kvCount, lengthBytes() + 4 + 1, "metadata key/values");

        var metadata = new LinkedHashMap<String, GgufValue>();
        for (long i = 0; i < kvCount; i++) {
            String key = string("metadata key");
            GgufValueType type = valueType("value of " + key);
            GgufValue value = new GgufValue(type, value(type, 0, key));
            if (metadata.putIfAbsent(key, value) != null) {
                throw new MalformedFileException("metadata key '" + key + "' appears twice");
            }
        }
        long alignment = alignment(metadata.get("general.alignment"));

        // The smallest tensor info: empty name, n_dims 0, type, offset.
        requireBytes(tensorCount, lengthBytes() + 4 + 4 + 8, "tensor infos");
        List<Raw> raws = new ArrayList<>((int) Math.min(tensorCount, 4096));
        Set<String> names = new HashSet<>();
        for (long i = 0; i < tensorCount; i++) {
            String name = string("tensor name");
            if (!names.add(name)) throw MalformedFileException.inTensor(name, "the name appears twice");
            long nDims = u32();
            ParseLimits.check("rank of tensor '" + name + "'", nDims, limits.maxRank());
            long[] ne = new long[(int) nDims];
            for (int d = 0; d < nDims; d++) {
                ne[d] = v1 ? u32() : i64();
                if (ne[d] < 0) {
                    throw MalformedFileException.inTensor(name, "dimension ne[" + d + "] = "
                            + Long.toUnsignedString(ne[d]) + " is negative as ggml's int64");
                }
            }
            long typeId = u32();
            long offset = i64();
            raws.add(new Raw(name, ne, typeId, offset));
        }

        checkHeaderLimit(0);
        long dataStart = alignUp(pos(), alignment);
        long dataBytes = Math.max(0, fileSize - dataStart);
        List<GgufTensorInfo> tensors = new ArrayList<>(raws.size());
        for (Raw r : raws) tensors.add(r.resolve(alignment, dataBytes));
        rejectOverlaps(tensors);
        return new GgufHeader(version, order, metadata, tensors, alignment, dataStart);
    }

    private record Raw(String name, long[] ne, long typeId, long offset) {
        GgufTensorInfo resolve(long alignment, long dataBytes) {
            GgufType type = GgufType.byId(typeId).orElseThrow(() -> UnsupportedFeatureException.inTensor(name,
                    GgufType.removedName(typeId)
                            .map(n -> "ggml type id " + typeId + " (" + n + ") was removed from ggml and is not supported")
                            .orElse("unknown ggml type id " + typeId)));
            long elements = 1;
            for (long d : ne) {
                try {
                    elements = Math.multiplyExact(elements, d);
                } catch (ArithmeticException e) {
                    throw new LimitExceededException("tensor '" + name + "': element count of "
                            + Arrays.toString(ne) + " overflows 64 bits");
                }
            }
            long rowLength = ne.length == 0 ? 1 : ne[0];
            if (rowLength % type.blockElements() != 0) {
                throw MalformedFileException.inTensor(name, "row length ne[0] = " + rowLength
                        + " is not a multiple of the " + type.name() + " block of " + type.blockElements());
            }
            long bytes;
            try {
                bytes = Math.multiplyExact(elements / type.blockElements(), (long) type.blockBytes());
            } catch (ArithmeticException e) {
                throw new LimitExceededException("tensor '" + name + "': byte size overflows 64 bits");
            }
            if (offset < 0) {
                throw MalformedFileException.inTensor(name, "data offset " + Long.toUnsignedString(offset)
                        + " lies past the end of the file");
            }
            if (offset % alignment != 0) {
                throw MalformedFileException.inTensor(name, "data offset " + Long.toUnsignedString(offset)
                        + " is not a multiple of the alignment " + alignment);
            }
            if (offset > dataBytes || bytes > dataBytes - offset) {
                throw MalformedFileException.inTensor(name, "data [" + offset + ", +" + bytes
                        + ") runs past the end of the file (data section holds " + dataBytes + " bytes)");
            }
            return new GgufTensorInfo(name, ne, type, offset, bytes);
        }
    }

    private static void rejectOverlaps(List<GgufTensorInfo> tensors) {
        List<GgufTensorInfo> sorted = new ArrayList<>(tensors);
        sorted.removeIf(t -> t.byteSize() == 0);
        sorted.sort((a, b) -> Long.compare(a.offset(), b.offset())); // not comparingLong: see SafetensorsHeader
        for (int i = 1; i < sorted.size(); i++) {
            GgufTensorInfo a = sorted.get(i - 1), b = sorted.get(i);
            if (a.offset() + a.byteSize() > b.offset()) {
                throw MalformedFileException.inTensor(b.name(), "data overlaps tensor '" + a.name() + "'");
            }
        }
    }

    private static long alignment(GgufValue v) {
        if (v == null) return GgufHeader.DEFAULT_ALIGNMENT;
        if (!v.type().isInteger()) {
            throw new MalformedFileException("general.alignment is a " + v.type().spelling() + ", not an integer");
        }
        long a = (Long) v.value();
        if (a <= 0 || Long.bitCount(a) != 1) {
            throw new MalformedFileException("general.alignment " + Long.toUnsignedString(a)
                    + " is not a positive power of two");
        }
        return a;
    }

    private static long alignUp(long p, long alignment) {
        long r = p % alignment;
        if (r == 0) return p;
        try {
            return Math.addExact(p, alignment - r);
        } catch (ArithmeticException e) {
            throw new MalformedFileException("the data section's aligned start overflows");
        }
    }

    // ------------------------------------------------------------------ values

    private Object value(GgufValueType type, int depth, String key) throws IOException {
        return switch (type) {
            case UINT8 -> (long) (get(1, key).get() & 0xFF);
            case INT8 -> (long) get(1, key).get();
            case UINT16 -> (long) (get(2, key).getShort() & 0xFFFF);
            case INT16 -> (long) get(2, key).getShort();
            case UINT32 -> get(4, key).getInt() & 0xFFFF_FFFFL;
            case INT32 -> (long) get(4, key).getInt();
            case UINT64, INT64 -> get(8, key).getLong();
            case FLOAT32 -> get(4, key).getFloat();
            case FLOAT64 -> get(8, key).getDouble();
            case BOOL -> {
                byte b = get(1, key).get();
                if (b != 0 && b != 1) throw new MalformedFileException("bool value of " + key + " is " + b + ", not 0 or 1");
                yield b == 1;
            }
            case STRING -> string("string value of " + key);
            case ARRAY -> array(depth + 1, key);
        };
    }

    private GgufValue.GgufArray array(int depth, String key) throws IOException {
        ParseLimits.check("nesting depth of arrays in " + key, depth, limits.maxNestingDepth());
        GgufValueType elementType = valueType("array element of " + key);
        long length = count("length of array " + key, Math.min(limits.maxArrayLength(), Integer.MAX_VALUE - 8));
        String what = "array " + key;
        return switch (elementType) {
            case STRING -> {
                requireBytes(length, lengthBytes(), what);
                yield new GgufValue.GgufArray(elementType, strings((int) length, what));
            }
            case ARRAY -> {
                requireBytes(length, 4 + lengthBytes(), what);
                List<Object> elements = new ArrayList<>((int) length);
                for (long i = 0; i < length; i++) elements.add(value(elementType, depth, key));
                yield new GgufValue.GgufArray(elementType, elements);
            }
            default -> {
                requireBytes(length, elementType.size, what);
                yield new GgufValue.GgufArray(elementType, numbers(elementType, (int) length, what));
            }
        };
    }

    /** Fixed-size elements read in bulk, normalized to little-endian. */
    private CompactLists.Numbers numbers(GgufValueType type, int length, String what) throws IOException {
        long total = (long) length * type.size;
        if (total > Integer.MAX_VALUE - 8) throw new LimitExceededException(what + " holds " + total + " bytes, too many for one array");
        byte[] raw = new byte[(int) total];
        read(raw, 0, raw.length, what);
        if (type == GgufValueType.BOOL) {
            for (byte b : raw) {
                if (b != 0 && b != 1) throw new MalformedFileException("bool element of " + what + " is " + b + ", not 0 or 1");
            }
        }
        if (buf.order() == ByteOrder.BIG_ENDIAN && type.size > 1) {
            for (int i = 0; i < raw.length; i += type.size) {
                for (int a = i, b = i + type.size - 1; a < b; a++, b--) {
                    byte t = raw[a];
                    raw[a] = raw[b];
                    raw[b] = t;
                }
            }
        }
        return new CompactLists.Numbers(type, raw);
    }

    /** Strings concatenated into one blob: no object per element until one is asked for. */
    private CompactLists.Strings strings(int length, String what) throws IOException {
        int[] ends = new int[length];
        byte[] blob = new byte[(int) Math.min(Math.min(fileSize - pos(), (long) length * 16), 1 << 24)];
        int total = 0;
        // Built once: 150 000 elements must not build 150 000 messages.
        String lengthOf = "length of a string in " + what, stringIn = "string in " + what;
        for (int i = 0; i < length; i++) {
            long n = count(lengthOf, limits.maxStringBytes());
            requireBytes(n, 1, stringIn);
            if (total + n > Integer.MAX_VALUE - 8) {
                throw new LimitExceededException(what + " holds over 2 GB of strings");
            }
            if (total + n > blob.length) {
                blob = java.util.Arrays.copyOf(blob, (int) Math.min(Integer.MAX_VALUE - 8,
                        Math.max(total + n, 2L * blob.length)));
            }
            read(blob, total, (int) n, what);
            total += (int) n;
            ends[i] = total;
        }
        return new CompactLists.Strings(blob, ends, length);
    }

    /** Copies {@code n} bytes from the file (through the buffer) into {@code dst}. */
    private void read(byte[] dst, int off, int n, String what) throws IOException {
        while (n > 0) {
            if (!buf.hasRemaining()) need(Math.min(n, BUFFER_BYTES), what);
            int k = Math.min(n, buf.remaining());
            buf.get(dst, off, k);
            off += k;
            n -= k;
        }
    }

    private GgufValueType valueType(String what) throws IOException {
        long id = u32();
        return GgufValueType.byId(id).orElseThrow(() ->
                new MalformedFileException("unknown metadata value type " + id + " for " + what));
    }

    private String string(String what) throws IOException {
        long length = count("length of " + what, limits.maxStringBytes());
        requireBytes(length, 1, what);
        int n = (int) length;
        if (n <= buf.capacity()) {
            need(n, what);
            String s = new String(buf.array(), buf.arrayOffset() + buf.position(), n, StandardCharsets.UTF_8);
            buf.position(buf.position() + n);
            return s;
        }
        checkHeaderLimit(n);
        byte[] bytes = new byte[n];
        int have = buf.remaining();
        buf.get(bytes, 0, have);
        ByteBuffer rest = ByteBuffer.wrap(bytes, have, n - have);
        long p = pos();
        while (rest.hasRemaining()) {
            int r = channel.read(rest, p + (rest.position() - have));
            if (r < 0) throw truncated(what);
        }
        bufStart = p + (n - have);
        buf.clear().flip();
        return new String(bytes, StandardCharsets.UTF_8);
    }

    // ------------------------------------------------------------------ primitives

    /** A count or length: uint64, or uint32 in GGUF v1. */
    private long count(String what, long max) throws IOException {
        long v = v1 ? u32() : i64();
        if (v < 0) throw new LimitExceededException(what + " is " + Long.toUnsignedString(v) + ", over the limit of " + max);
        ParseLimits.check(what, v, max);
        return v;
    }

    /** Refuses {@code count} items of at least {@code minBytes} each when the file cannot hold them. */
    private void requireBytes(long count, int minBytes, String what) {
        long left = fileSize - pos();
        if (count > 0 && (count > left / minBytes)) {
            throw new MalformedFileException("GGUF file is truncated or corrupt: " + count + " " + what
                    + " declared, but only " + left + " bytes are left in the file");
        }
    }

    private int lengthBytes() {
        return v1 ? 4 : 8;
    }

    private long u32() throws IOException {
        return get(4, "the header").getInt() & 0xFFFF_FFFFL;
    }

    private long i64() throws IOException {
        return get(8, "the header").getLong();
    }

    private ByteBuffer get(int n, String what) throws IOException {
        need(n, what);
        return buf;
    }

    private long pos() {
        return bufStart + buf.position();
    }

    private void checkHeaderLimit(long n) {
        if (pos() + n > limits.maxHeaderBytes()) {
            throw new LimitExceededException("GGUF header is over the limit of " + limits.maxHeaderBytes() + " bytes");
        }
    }

    /** Makes {@code n <= BUFFER_BYTES} bytes available at the buffer's position. */
    private void need(int n, String what) throws IOException {
        if (buf.remaining() >= n) return;
        if (fileSize - pos() < n) throw truncated(what);
        checkHeaderLimit(n);
        long p = pos();
        buf.compact();
        bufStart = p;
        while (buf.position() < n) {
            int r = channel.read(buf, bufStart + buf.position());
            if (r < 0) throw truncated(what);
        }
        buf.flip();
    }

    private MalformedFileException truncated(String what) {
        return new MalformedFileException("GGUF file is truncated: it ends at byte " + fileSize + " inside " + what);
    }
}
