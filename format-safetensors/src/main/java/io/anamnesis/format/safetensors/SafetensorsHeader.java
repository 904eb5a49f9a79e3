package io.anamnesis.format.safetensors;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.TensorIOException;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The header of a safetensors file: the 8-byte little-endian length {@code N}, then {@code N}
 * bytes of UTF-8 JSON naming every tensor's dtype, shape and {@code data_offsets} (relative to
 * the data section that starts at {@code 8 + N}), plus an optional {@code __metadata__}
 * string-to-string map.
 *
 * <p>{@link #read(InputStream, ParseLimits)} takes the header from any stream (an HTTP range
 * request, a socket) and reads exactly {@code 8 + N} bytes, never a tensor byte. Everything that
 * can be checked without the file's size is checked: the length against
 * {@link ParseLimits#maxHeaderBytes()}, UTF-8, JSON syntax and duplicate keys, dtypes, shapes,
 * and that the data offsets tile {@code [0, dataBytes())} without gap or overlap. A
 * {@link SafetensorsReader} parses with the same code and then also requires the data section
 * to end exactly at the end of the file.
 *
 * <p>The JSON is read with Jackson's streaming parser (jackson-core), token by token into the
 * records below: no tree is built, which keeps a 12k-tensor header fast to open and the CLI's
 * start-up free of databind's set-up. Every module outside the api reads JSON this way
 * (tests use databind trees where that is handier).
 *
 * @param headerLength the JSON header's length {@code N} in bytes, padding included
 * @param metadata     {@code __metadata__}, in header order (empty when absent)
 * @param tensors      every tensor, in data order (sorted by {@code data_offsets})
 */
public record SafetensorsHeader(long headerLength, Map<String, String> metadata, List<Tensor> tensors) {

    /** Bytes of the little-endian header-length prefix. */
    public static final int PREFIX_BYTES = 8;

    /** The special key of the string-to-string metadata map. */
    public static final String METADATA_KEY = "__metadata__";

    /**
     * One tensor with its place in the data section.
     *
     * @param entry name, dtype, shape and byte size
     * @param begin first byte, relative to the start of the data section
     * @param end   one past the last byte, relative to the start of the data section
     */
    public record Tensor(TensorEntry entry, long begin, long end) {
        public String name() {
            return entry.name();
        }
    }

    public SafetensorsHeader {
        metadata = Collections.unmodifiableMap(new LinkedHashMap<>(metadata));
        tensors = List.copyOf(tensors);
    }

    /** Where the data section starts in the file: {@code 8 + headerLength}. */
    public long dataStart() {
        return PREFIX_BYTES + headerLength;
    }

    /** Bytes of the data section the tensors cover (the end of the last one). */
    public long dataBytes() {
        return tensors.isEmpty() ? 0 : tensors.getLast().end();
    }

    /** The size a file with this header must have: prefix, header and data, nothing after. */
    public long fileSize() {
        return dataStart() + dataBytes();
    }

    /** The tensor of that name (a linear search; {@link SafetensorsReader} keeps an index). */
    public Optional<Tensor> tensor(String name) {
        return tensors.stream().filter(t -> t.name().equals(name)).findFirst();
    }

    // ---------------------------------------------------------------- stream source

    /** {@link #read(InputStream, ParseLimits)} with the default limits. */
    public static SafetensorsHeader read(InputStream in) {
        return read(in, ParseLimits.defaults());
    }

    /**
     * Reads the prefix and the JSON header from {@code in}, exactly {@code 8 + N} bytes, and
     * leaves the stream positioned at the first data byte.
     *
     * @throws MalformedFileException  on a short stream or an invalid header, naming the tensor at fault
     * @throws LimitExceededException  when the header, a count or a size breaks {@code limits}
     * @throws TensorIOException       when the stream fails
     */
    public static SafetensorsHeader read(InputStream in, ParseLimits limits) {
        try {
            byte[] prefix = in.readNBytes(PREFIX_BYTES);
            if (prefix.length < PREFIX_BYTES) {
                throw new MalformedFileException("stream ends after " + prefix.length
                        + " bytes, before the 8-byte header length");
            }
            int n = headerLength(prefix, limits);
            // readNBytes grows its buffer as bytes arrive, so a length that lies about a short
            // stream costs no more memory than the stream holds.
            byte[] header = in.readNBytes(n);
            if (header.length < n) {
                throw new MalformedFileException("header is truncated: its length field says " + n
                        + " bytes, the stream holds " + header.length);
            }
            return parse(header, limits);
        } catch (IOException e) {
            throw new TensorIOException("cannot read the safetensors header: " + e.getMessage(), e);
        }
    }

    // ---------------------------------------------------------------- shared parser

    /**
     * The header length from the 8-byte prefix, checked against the limit before anything is
     * allocated. The field is an unsigned 64-bit integer: 2^64-8 must read as huge, not negative.
     */
    static int headerLength(byte[] prefix, ParseLimits limits) {
        long n = 0;
        for (int i = PREFIX_BYTES - 1; i >= 0; i--) n = (n << 8) | (prefix[i] & 0xFF);
        long max = Math.min(limits.maxHeaderBytes(), Integer.MAX_VALUE - 16);
        if (Long.compareUnsigned(n, max) > 0) {
            throw new LimitExceededException("header length is " + Long.toUnsignedString(n)
                    + " bytes, over the limit of " + max);
        }
        return (int) n;
    }

    private static final Map<String, DType> DTYPES = DType.SAFETENSORS.stream()
            .collect(Collectors.toUnmodifiableMap(DType::name, Function.identity()));

    /** Parses and validates header bytes (the {@code N} bytes after the prefix). */
    static SafetensorsHeader parse(byte[] header, ParseLimits limits) {
        int n = header.length;
        if (n == 0 || header[0] != '{') {
            throw new MalformedFileException(n == 0 ? "header is empty"
                    : "header does not start with '{' (byte 0x" + hex(header[0]) + ")");
        }
        // The spec allows trailing spaces (0x20) after the object and nothing else: NUL padding,
        // which some writers emit, is rejected as the reference's serde_json rejects it.
        int end = n;
        while (end > 0 && header[end - 1] == ' ') end--;
        if (header[end - 1] != '}') {
            byte last = header[end - 1];
            throw new MalformedFileException(last == 0
                    ? "header is padded with NUL bytes; the spec allows only spaces (0x20)"
                    : "header JSON is truncated or followed by bytes other than spaces (last byte 0x" + hex(last) + ")");
        }
        int bad = firstInvalidUtf8(header, end);
        if (bad >= 0) {
            throw new MalformedFileException("header is not valid UTF-8 (byte 0x" + hex(header[bad])
                    + " at header offset " + bad + ")");
        }
        Parsed parsed = new Parser(header, end, limits).run();
        return new SafetensorsHeader(n, parsed.metadata(), validate(parsed.tensors()));
    }

    /** The tensors in data order, after checking that they tile the data section. */
    private static List<Tensor> validate(List<Tensor> tensors) {
        List<Tensor> sorted = new ArrayList<>(tensors);
        // Stable: empty tensors sharing an offset keep their header order.
        // (written out: the JDK's comparingLong comparators are spun at run time, ours come
        // from the AOT cache)
        sorted.sort((a, b) -> a.begin() != b.begin() ? Long.compare(a.begin(), b.begin()) : Long.compare(a.end(), b.end()));
        long expected = 0;
        for (Tensor t : sorted) {
            if (t.begin() < expected) {
                throw MalformedFileException.inTensor(t.name(), "data_offsets [" + t.begin() + ", " + t.end()
                        + "] overlap the tensor before it, which ends at " + expected);
            }
            if (t.begin() > expected) {
                throw MalformedFileException.inTensor(t.name(), "data_offsets [" + t.begin() + ", " + t.end()
                        + "] leave a gap of " + (t.begin() - expected) + " bytes after offset " + expected
                        + "; the data section must be covered without holes");
            }
            expected = t.end();
        }
        return sorted;
    }

    /**
     * Index of the first byte that breaks UTF-8 (RFC 3629: shortest form, no surrogates,
     * nothing above U+10FFFF) in {@code b[0, end)}, or -1.
     */
    static int firstInvalidUtf8(byte[] b, int end) {
        int i = 0;
        while (i < end) {
            int c = b[i];
            if (c >= 0) {
                i++;
                continue;
            }
            c &= 0xFF;
            int trail;
            int lo = 0x80;
            int hi = 0xBF;
            if (c >= 0xC2 && c <= 0xDF) {
                trail = 1;
            } else if (c >= 0xE0 && c <= 0xEF) {
                trail = 2;
                if (c == 0xE0) lo = 0xA0;       // no overlong 3-byte forms
                if (c == 0xED) hi = 0x9F;       // no UTF-16 surrogates
            } else if (c >= 0xF0 && c <= 0xF4) {
                trail = 3;
                if (c == 0xF0) lo = 0x90;       // no overlong 4-byte forms
                if (c == 0xF4) hi = 0x8F;       // nothing above U+10FFFF
            } else {
                return i;
            }
            if (i + trail >= end) return i;
            int c1 = b[i + 1] & 0xFF;
            if (c1 < lo || c1 > hi) return i;
            for (int k = 2; k <= trail; k++) {
                int ck = b[i + k] & 0xFF;
                if (ck < 0x80 || ck > 0xBF) return i;
            }
            i += trail + 1;
        }
        return -1;
    }

    private static String hex(byte b) {
        return String.format("%02x", b & 0xFF);
    }

    private record Parsed(Map<String, String> metadata, List<Tensor> tensors) {
    }

    /** One pass of Jackson's streaming parser over the header object. */
    private static final class Parser {

        private final byte[] bytes;
        private final int length;
        private final ParseLimits limits;
        private String tensor;  // the tensor whose object is being parsed, for error messages

        Parser(byte[] bytes, int length, ParseLimits limits) {
            this.bytes = bytes;
            this.length = length;
            this.limits = limits;
        }

        /** The last factory built, with the limits it was built for (factories are thread-safe). */
        private static volatile Map.Entry<ParseLimits, JsonFactory> cached;

        private JsonFactory factory() {
            Map.Entry<ParseLimits, JsonFactory> c = cached;
            if (c != null && c.getKey().equals(limits)) return c.getValue();
            JsonFactory f = buildFactory();
            cached = Map.entry(limits, f);
            return f;
        }

        private JsonFactory buildFactory() {
            int maxString = (int) Math.min(Integer.MAX_VALUE, limits.maxStringBytes());
            return JsonFactory.builder()
                    .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                    // 100k distinct tensor names: interning them would only fill the string table.
                    .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
                    .disable(JsonFactory.Feature.CANONICALIZE_FIELD_NAMES)
                    .streamReadConstraints(StreamReadConstraints.builder()
                            .maxStringLength(maxString)
                            .maxNameLength(maxString)
                            // header object, tensor object, shape array: anything deeper is wrong
                            // anyway, but let the structure checks say so.
                            .maxNestingDepth(Math.max(3, Math.min(limits.maxNestingDepth(), 1000)))
                            .build())
                    .build();
        }

        Parsed run() {
            Map<String, String> metadata = new LinkedHashMap<>();
            List<Tensor> tensors = new ArrayList<>();
            try (JsonParser p = factory().createParser(bytes, 0, length)) {
                try {
                    if (p.nextToken() != JsonToken.START_OBJECT) {
                        throw new MalformedFileException("header JSON is not an object");
                    }
                    JsonToken t;
                    while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                        String key = p.currentName();
                        if (key.equals(METADATA_KEY)) {
                            readMetadata(p, metadata);
                        } else {
                            if (tensors.size() >= limits.maxTensors()) {
                                throw new LimitExceededException("header declares more than " + limits.maxTensors()
                                        + " tensors, the limit");
                            }
                            tensor = key;
                            tensors.add(readTensor(p, key));
                            tensor = null;
                        }
                    }
                    if (t != JsonToken.END_OBJECT) throw new MalformedFileException("header JSON is not an object");
                    if (p.nextToken() != null) {
                        throw new MalformedFileException("header holds more JSON after its object");
                    }
                } catch (StreamConstraintsException e) {
                    throw attribute(p, new LimitExceededException("header JSON: " + oneLine(e.getOriginalMessage())), e);
                } catch (JsonProcessingException e) {
                    throw attribute(p, null, e);
                }
            } catch (IOException e) {
                // A byte-array source cannot fail to read; closing cannot fail either.
                throw new MalformedFileException("header JSON cannot be read: " + oneLine(e.getMessage()), e);
            }
            return new Parsed(metadata, tensors);
        }

        /**
         * A Jackson failure as a typed error naming the tensor: the one being parsed, or for a
         * duplicate top-level key, the key itself.
         */
        private RuntimeException attribute(JsonParser p, LimitExceededException limit, JsonProcessingException e) {
            if (limit != null) return tensor == null ? limit : LimitExceededException.inTensor(tensor, limit.getMessage());
            long at = e.getLocation() == null ? -1 : e.getLocation().getByteOffset();
            String msg = "header JSON is invalid: " + oneLine(e.getOriginalMessage())
                    + (at >= 0 ? " (at header byte " + at + ")" : "");
            String who = tensor;
            JsonStreamContext ctx = p.getParsingContext();
            if (who == null && ctx != null && ctx.getParent() != null && ctx.getParent().inRoot()) {
                String name = ctx.getCurrentName();
                if (name != null && !name.equals(METADATA_KEY)) who = name;
            }
            return who == null ? new MalformedFileException(msg, e) : MalformedFileException.inTensor(who, msg);
        }

        private void readMetadata(JsonParser p, Map<String, String> metadata) throws IOException {
            JsonToken t = p.nextToken();
            if (t == JsonToken.VALUE_NULL) return;  // serde reads a null Option as absent
            if (t != JsonToken.START_OBJECT) {
                throw new MalformedFileException("__metadata__ must be an object of strings, not " + describe(t));
            }
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String key = p.currentName();
                JsonToken v = p.nextToken();
                if (v != JsonToken.VALUE_STRING) {
                    throw new MalformedFileException("__metadata__ value of '" + key
                            + "' must be a string, not " + describe(v));
                }
                if (metadata.size() >= limits.maxMetadataEntries()) {
                    throw new LimitExceededException("__metadata__ has more than " + limits.maxMetadataEntries()
                            + " entries, the limit");
                }
                metadata.put(key, p.getText());
            }
        }

        private Tensor readTensor(JsonParser p, String name) throws IOException {
            JsonToken t = p.nextToken();
            if (t != JsonToken.START_OBJECT) {
                throw MalformedFileException.inTensor(name, "must be an object with dtype, shape and data_offsets, not "
                        + describe(t));
            }
            DType dtype = null;
            long[] shape = null;
            long[] offsets = null;
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                switch (field) {
                    case "dtype" -> {
                        JsonToken v = p.nextToken();
                        if (v != JsonToken.VALUE_STRING) {
                            throw MalformedFileException.inTensor(name, "dtype must be a string, not " + describe(v));
                        }
                        String s = p.getText();
                        dtype = DTYPES.get(s);
                        if (dtype == null) throw MalformedFileException.inTensor(name, "unknown dtype '" + s + "'");
                    }
                    case "shape" -> shape = readDims(p, name);
                    case "data_offsets" -> {
                        offsets = readOffsets(p, name);
                    }
                    default -> {
                        // Like the reference (serde without deny_unknown_fields), extra fields are ignored.
                        p.nextToken();
                        p.skipChildren();
                    }
                }
            }
            if (dtype == null) throw MalformedFileException.inTensor(name, "has no dtype");
            if (shape == null) throw MalformedFileException.inTensor(name, "has no shape");
            if (offsets == null) throw MalformedFileException.inTensor(name, "has no data_offsets");

            long elements;
            try {
                elements = Shape.of(shape).elementCount();
            } catch (ArithmeticException e) {
                throw LimitExceededException.inTensor(name, "shape " + Shape.of(shape)
                        + " has more elements than a 64-bit count holds");
            }
            // Sub-byte dtypes (F4, F6) count logical elements; the reference requires their bits to
            // fill whole bytes.
            if (!dtype.fitsWholeBlocks(elements)) {
                throw MalformedFileException.inTensor(name, elements + " elements of " + dtype
                        + " do not fill a whole number of bytes");
            }
            long bytes;
            try {
                bytes = dtype.byteSize(elements);
            } catch (ArithmeticException e) {
                throw LimitExceededException.inTensor(name, "shape " + Shape.of(shape) + " of " + dtype
                        + " needs more bytes than a 64-bit size holds");
            }
            long begin = offsets[0];
            long end = offsets[1];
            if (end < begin) {
                throw MalformedFileException.inTensor(name, "data_offsets [" + begin + ", " + end + "] end before they begin");
            }
            if (end - begin != bytes) {
                throw MalformedFileException.inTensor(name, "data_offsets [" + begin + ", " + end + "] span "
                        + (end - begin) + " bytes, but " + dtype + " " + Shape.of(shape) + " needs " + bytes);
            }
            return new Tensor(new TensorEntry(name, dtype, Shape.of(shape), bytes), begin, end);
        }

        private long[] readDims(JsonParser p, String name) throws IOException {
            JsonToken t = p.nextToken();
            if (t != JsonToken.START_ARRAY) {
                throw MalformedFileException.inTensor(name, "shape must be an array of integers, not " + describe(t));
            }
            long[] dims = new long[4];
            int rank = 0;
            while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
                if (rank >= limits.maxRank()) {
                    throw LimitExceededException.inTensor(name, "shape has more than " + limits.maxRank()
                            + " dimensions, the limit");
                }
                if (rank == dims.length) dims = java.util.Arrays.copyOf(dims, rank * 2);
                dims[rank++] = nonNegative(p, t, name, "shape", true);
            }
            return java.util.Arrays.copyOf(dims, rank);
        }

        private long[] readOffsets(JsonParser p, String name) throws IOException {
            JsonToken t = p.nextToken();
            if (t != JsonToken.START_ARRAY) {
                throw MalformedFileException.inTensor(name, "data_offsets must be [begin, end], not " + describe(t));
            }
            long[] o = new long[2];
            int i = 0;
            while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
                if (i == 2) throw MalformedFileException.inTensor(name, "data_offsets must hold exactly two integers");
                o[i++] = nonNegative(p, t, name, "data_offsets", false);
            }
            if (i != 2) throw MalformedFileException.inTensor(name, "data_offsets must hold exactly two integers");
            return o;
        }

        /** A non-negative integer that fits a long; a too-large dimension is a limit, an offset malformed. */
        private long nonNegative(JsonParser p, JsonToken t, String name, String what, boolean dimension)
                throws IOException {
            if (t != JsonToken.VALUE_NUMBER_INT) {
                throw MalformedFileException.inTensor(name, what + " must hold non-negative integers, not " + describe(t)
                        + (t == JsonToken.VALUE_NUMBER_FLOAT || t == JsonToken.VALUE_STRING ? " " + p.getText() : ""));
            }
            JsonParser.NumberType type = p.getNumberType();
            if (type == JsonParser.NumberType.BIG_INTEGER) {
                if (p.getBigIntegerValue().signum() < 0) {
                    throw MalformedFileException.inTensor(name, what + " holds a negative value " + p.getText());
                }
                String msg = what + " value " + p.getText() + " does not fit a 64-bit signed integer";
                throw dimension ? LimitExceededException.inTensor(name, msg) : MalformedFileException.inTensor(name, msg);
            }
            long v = p.getLongValue();
            if (v < 0) throw MalformedFileException.inTensor(name, what + " holds a negative value " + v);
            return v;
        }

        private static String describe(JsonToken t) {
            if (t == null) return "the end of the header";
            return switch (t) {
                case START_OBJECT -> "an object";
                case START_ARRAY -> "an array";
                case VALUE_STRING -> "a string";
                case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> "a number";
                case VALUE_TRUE, VALUE_FALSE -> "a boolean";
                case VALUE_NULL -> "null";
                default -> t.name();
            };
        }

        private static String oneLine(String s) {
            return s == null ? "" : s.replace('\n', ' ').replace('\r', ' ');
        }
    }
}
