package io.anamnesis.format.npz;

import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.UnsupportedFeatureException;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The header of one {@code .npy} array (NPY format 1.0, 2.0 and 3.0): magic
 * {@code \x93NUMPY}, version, a little-endian header length (u16 in 1.0, u32 after), and a
 * Python dict literal with exactly {@code descr}, {@code fortran_order} and {@code shape}.
 *
 * @param major        format major version (1, 2 or 3)
 * @param dtype        element type and byte order
 * @param fortranOrder true when the data is column-major
 * @param shape        logical shape
 * @param dataOffset   where the array data starts, from the start of the .npy bytes
 */
record NpyHeader(int major, NpyDtype dtype, boolean fortranOrder, Shape shape, long dataOffset) {
    static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};
    private static final Set<String> KEYS = Set.of("descr", "fortran_order", "shape");

    /** Reads {@code length} bytes at {@code offset} of the .npy bytes; may return fewer at the end. */
    @FunctionalInterface
    interface Source {
        byte[] read(long offset, int length);
    }

    /** Bytes of array data the header declares. */
    long dataBytes() {
        return dtype.dtype().byteSize(shape.elementCount());
    }

    /**
     * Parses the header of a .npy of {@code available} bytes.
     *
     * @throws MalformedFileException bad magic, truncated header, invalid literal, negative dimension
     * @throws LimitExceededException header or shape beyond limits, element count overflow
     * @throws UnsupportedFeatureException unknown version, object or structured dtype
     */
    static NpyHeader parse(Source source, long available, String array, ParseLimits limits) {
        byte[] prefix = source.read(0, 12);
        if (prefix.length < 10) throw MalformedFileException.inTensor(array, "too short for an NPY header (" + available + " bytes)");
        for (int i = 0; i < MAGIC.length; i++) {
            if (prefix[i] != MAGIC[i]) throw MalformedFileException.inTensor(array, "not an NPY array (bad magic)");
        }
        int major = prefix[6] & 0xFF;
        int minor = prefix[7] & 0xFF;
        if (major < 1 || major > 3 || minor != 0) {
            throw UnsupportedFeatureException.inTensor(array, "NPY format version " + major + "." + minor
                    + " is not supported (1.0, 2.0 and 3.0 are)");
        }
        ByteBuffer b = ByteBuffer.wrap(prefix).order(ByteOrder.LITTLE_ENDIAN);
        long headerLength;
        int lengthBytes;
        if (major == 1) {
            headerLength = b.getShort(8) & 0xFFFF;
            lengthBytes = 2;
        } else {
            if (prefix.length < 12) throw MalformedFileException.inTensor(array, "truncated NPY header");
            headerLength = b.getInt(8) & 0xFFFF_FFFFL;
            lengthBytes = 4;
        }
        ParseLimits.check("NPY header of " + array, headerLength, limits.maxHeaderBytes());
        long start = 8 + lengthBytes;
        if (start + headerLength > available) {
            throw MalformedFileException.inTensor(array, "NPY header of " + headerLength + " bytes runs past the end");
        }
        byte[] raw = source.read(start, (int) headerLength);
        if (raw.length != headerLength) throw MalformedFileException.inTensor(array, "truncated NPY header");
        String text = decode(raw, major, array);

        Object literal = PyLiteral.parse(text, array, limits.maxNestingDepth());
        if (!(literal instanceof Map<?, ?> dict)) throw MalformedFileException.inTensor(array, "NPY header is not a dict");
        if (!dict.keySet().equals(KEYS)) {
            throw MalformedFileException.inTensor(array, "NPY header keys are " + dict.keySet() + ", expected " + KEYS);
        }
        Object descr = dict.get("descr");
        if (descr instanceof List<?>) {
            throw UnsupportedFeatureException.inTensor(array, "structured (record) dtypes are not supported");
        }
        if (!(descr instanceof String d)) throw MalformedFileException.inTensor(array, "NPY descr is not a string");
        if (!(dict.get("fortran_order") instanceof Boolean fortran)) {
            throw MalformedFileException.inTensor(array, "NPY fortran_order is not a bool");
        }
        if (!(dict.get("shape") instanceof List<?> dims)) throw MalformedFileException.inTensor(array, "NPY shape is not a tuple");
        ParseLimits.check("rank of " + array, dims.size(), limits.maxRank());
        long[] shape = new long[dims.size()];
        for (int i = 0; i < shape.length; i++) {
            if (!(dims.get(i) instanceof BigInteger dim)) throw MalformedFileException.inTensor(array, "NPY shape holds a non-integer");
            if (dim.signum() < 0) throw MalformedFileException.inTensor(array, "negative dimension " + dim + " in the NPY shape");
            if (dim.bitLength() > 62) throw LimitExceededException.inTensor(array, "dimension " + dim + " is absurdly large");
            shape[i] = dim.longValueExact();
        }
        NpyDtype dtype = NpyDtype.of(d, array);
        Shape s = Shape.of(shape);
        try {
            dtype.dtype().byteSize(s.elementCount());
        } catch (ArithmeticException e) {
            throw LimitExceededException.inTensor(array, "shape " + s + " overflows a 64-bit byte count");
        }
        return new NpyHeader(major, dtype, fortran, s, start + headerLength);
    }

    private static String decode(byte[] raw, int major, String array) {
        if (major < 3) return new String(raw, StandardCharsets.ISO_8859_1);
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(raw)).toString();
        } catch (CharacterCodingException e) {
            throw MalformedFileException.inTensor(array, "NPY 3.0 header is not valid UTF-8");
        }
    }
}
