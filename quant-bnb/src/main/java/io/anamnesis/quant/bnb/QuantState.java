package io.anamnesis.quant.bnb;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.UnsupportedFeatureException;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The JSON blob bitsandbytes stores in {@code <weight>.quant_state.bitsandbytes__nf4} (or
 * {@code __fp4}): {@code QuantState.as_dict(packed=True)} minus its tensors, i.e.
 * {@code quant_type, blocksize, dtype, shape} and, for double quantization,
 * {@code nested_blocksize, nested_dtype, nested_offset}.
 *
 * <p>Read with Jackson's streaming parser, as every module outside the api reads JSON: the
 * blob is one flat object, so its members are collected in one pass and checked afterwards,
 * with no databind tree, whose class loading and set-up would cost a short {@code amn} run
 * far more than the parse itself.
 *
 * @param quantType {@code nf4} or {@code fp4}
 * @param blocksize elements per absmax block
 * @param dtype     the compute dtype bitsandbytes recorded ({@code float32}, {@code bfloat16}, {@code float16});
 *                  it does not change the float32 arithmetic, only what the reference narrows to
 * @param shape     the shape of the original (and of the recovered) tensor, row-major
 * @param nested    the double-quantization parameters, when present
 */
public record QuantState(String quantType, int blocksize, String dtype, Shape shape, Optional<Nested> nested) {

    /**
     * @param blocksize 4-bit blocks per nested block
     * @param dtype     the nested dtype bitsandbytes recorded
     * @param offset    {@code nested_offset}, added after the nested multiply
     */
    public record Nested(int blocksize, String dtype, float offset) {
    }

    /** Smallest and largest block sizes bitsandbytes' block-wise kernels accept (powers of two). */
    static final int MIN_BLOCKSIZE = 32;
    static final int MAX_BLOCKSIZE = 4096;

    public boolean fp4() {
        return quantType.equals("fp4");
    }

    public long elements() {
        return shape.elementCount();
    }

    /**
     * Parses and validates the blob of tensor {@code tensor}.
     *
     * @throws MalformedFileException      on invalid UTF-8 or JSON, a missing or ill-typed key, an invalid block size
     * @throws UnsupportedFeatureException on a quant type or dtype this module does not know
     */
    public static QuantState parse(String tensor, byte[] utf8, ParseLimits limits) {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(utf8)).toString();
        } catch (CharacterCodingException e) {
            throw MalformedFileException.inTensor(tensor, "quant state is not valid UTF-8");
        }
        Map<String, Object> root = members(tensor, text, limits);
        String quantType = text(tensor, root, "quant_type").toLowerCase(Locale.ROOT);
        if (!quantType.equals("nf4") && !quantType.equals("fp4")) {
            throw UnsupportedFeatureException.inTensor(tensor, "quant_type '" + quantType + "' is not nf4 or fp4");
        }
        int blocksize = blocksize(tensor, root, "blocksize");
        String dtype = floatDtype(tensor, text(tensor, root, "dtype"));
        Shape shape = shape(tensor, root.get("shape"), limits);

        Optional<Nested> nested = Optional.empty();
        if (root.containsKey("nested_blocksize") || root.containsKey("nested_offset") || root.containsKey("nested_dtype")) {
            int nestedBlocksize = blocksize(tensor, root, "nested_blocksize");
            String nestedDtype = floatDtype(tensor, text(tensor, root, "nested_dtype"));
            if (!(root.get("nested_offset") instanceof Number off)) {
                throw MalformedFileException.inTensor(tensor, "quant state lacks a numeric nested_offset");
            }
            // The reference does torch.tensor(float(nested_offset)): a float32, round to nearest.
            float offset = (float) off.doubleValue();
            if (!Float.isFinite(offset)) {
                throw MalformedFileException.inTensor(tensor, "nested_offset " + off + " is not a finite float32");
            }
            nested = Optional.of(new Nested(nestedBlocksize, nestedDtype, offset));
        }
        return new QuantState(quantType, blocksize, dtype, shape, nested);
    }

    /**
     * The members of the one JSON object {@code text} holds: strings, numbers (integers as
     * Integer, Long or BigInteger, others as Double), booleans, arrays as lists, and
     * {@link #OTHER} for null and nested objects, which no key of a quant state holds.
     */
    private static Map<String, Object> members(String tensor, String text, ParseLimits limits) {
        try (JsonParser p = factory(limits).createParser(text)) {
            JsonToken first = p.nextToken();
            Map<String, Object> members = new HashMap<>();
            if (first == JsonToken.START_OBJECT) {
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String key = p.currentName();
                    members.put(key, value(p, p.nextToken()));
                }
            } else {
                p.skipChildren();
            }
            if (p.nextToken() != null) throw new JsonParseException(p, "trailing content after the JSON value");
            if (first != JsonToken.START_OBJECT) {
                throw MalformedFileException.inTensor(tensor, "quant state is not a JSON object");
            }
            return members;
        } catch (StreamConstraintsException e) {
            throw LimitExceededException.inTensor(tensor, "quant state JSON: " + e.getOriginalMessage());
        } catch (JacksonException e) {
            throw MalformedFileException.inTensor(tensor, "quant state is not valid JSON: "
                    + e.getOriginalMessage().lines().findFirst().orElse("parse error"));
        } catch (IOException e) {
            // a String source has no I/O of its own; anything else is a parse failure
            throw MalformedFileException.inTensor(tensor, "quant state is not valid JSON: " + e.getMessage());
        }
    }

    /** Null and nested objects: present, but no value a quant state key may hold. */
    private static final Object OTHER = new Object();

    private static Object value(JsonParser p, JsonToken t) throws IOException {
        return switch (t) {
            case VALUE_STRING -> p.getText();
            case VALUE_NUMBER_INT -> p.getNumberValue();
            case VALUE_NUMBER_FLOAT -> p.getDoubleValue();
            case VALUE_TRUE, VALUE_FALSE -> p.getBooleanValue();
            case START_ARRAY -> {
                List<Object> items = new ArrayList<>();
                JsonToken next;
                while ((next = p.nextToken()) != JsonToken.END_ARRAY) items.add(value(p, next));
                yield items;
            }
            default -> {
                p.skipChildren();
                yield OTHER;
            }
        };
    }

    private static JsonFactory factory(ParseLimits limits) {
        StreamReadConstraints constraints = StreamReadConstraints.builder()
                .maxNestingDepth(Math.max(1, limits.maxNestingDepth()))
                .maxStringLength((int) Math.min(Integer.MAX_VALUE, Math.max(1, limits.maxStringBytes())))
                .maxNumberLength(64)
                .build();
        return JsonFactory.builder().streamReadConstraints(constraints)
                .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                .build();
    }

    private static String text(String tensor, Map<String, Object> root, String key) {
        if (!(root.get(key) instanceof String s)) {
            throw MalformedFileException.inTensor(tensor, "quant state lacks a string '" + key + "'");
        }
        return s;
    }

    /** bitsandbytes writes the torch dtype without its {@code torch.} prefix. */
    private static String floatDtype(String tensor, String dtype) {
        String d = dtype.startsWith("torch.") ? dtype.substring("torch.".length()) : dtype;
        return switch (d) {
            case "float32", "float16", "bfloat16" -> d;
            default -> throw UnsupportedFeatureException.inTensor(tensor, "quant state dtype '" + dtype
                    + "' is not float32, float16 or bfloat16");
        };
    }

    /** A block size bitsandbytes' block-wise kernels take: a power of two from 32 to 4096. */
    private static int blocksize(String tensor, Map<String, Object> root, String key) {
        Object n = root.get(key);
        if (!isLong(n)) {
            throw MalformedFileException.inTensor(tensor, "quant state lacks an integer '" + key + "'");
        }
        long v = ((Number) n).longValue();
        if (v < MIN_BLOCKSIZE || v > MAX_BLOCKSIZE || Long.bitCount(v) != 1) {
            throw MalformedFileException.inTensor(tensor, key + " " + n
                    + " is not a block size bitsandbytes uses (a power of two from " + MIN_BLOCKSIZE
                    + " to " + MAX_BLOCKSIZE + ")");
        }
        return (int) v;
    }

    /** A JSON integer that fits a long (Jackson gives Integer, Long, or BigInteger beyond). */
    private static boolean isLong(Object n) {
        return n instanceof Integer || n instanceof Long || (n instanceof BigInteger b && b.bitLength() < 64);
    }

    private static Shape shape(String tensor, Object n, ParseLimits limits) {
        if (!(n instanceof List<?> dimsJson)) {
            throw MalformedFileException.inTensor(tensor, "quant state lacks a 'shape' array");
        }
        ParseLimits.check("rank of the quant state shape of " + tensor, dimsJson.size(), limits.maxRank());
        long[] dims = new long[dimsJson.size()];
        for (int i = 0; i < dims.length; i++) {
            Object d = dimsJson.get(i);
            if (!isLong(d) || ((Number) d).longValue() < 0) {
                throw MalformedFileException.inTensor(tensor, "quant state shape " + dimsJson + " holds "
                        + d + ", not a non-negative integer");
            }
            dims[i] = ((Number) d).longValue();
        }
        Shape shape = Shape.of(dims);
        try {
            shape.elementCount();
        } catch (ArithmeticException e) {
            throw MalformedFileException.inTensor(tensor, "quant state shape " + shape + " overflows a long");
        }
        return shape;
    }
}
