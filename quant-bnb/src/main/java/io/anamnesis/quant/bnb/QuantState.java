package io.anamnesis.quant.bnb;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.UnsupportedFeatureException;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Optional;

/**
 * The JSON blob bitsandbytes stores in {@code <weight>.quant_state.bitsandbytes__nf4} (or
 * {@code __fp4}): {@code QuantState.as_dict(packed=True)} minus its tensors, i.e.
 * {@code quant_type, blocksize, dtype, shape} and, for double quantization,
 * {@code nested_blocksize, nested_dtype, nested_offset}.
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
        JsonNode root;
        try {
            root = mapper(limits).readTree(text);
        } catch (com.fasterxml.jackson.core.exc.StreamConstraintsException e) {
            throw LimitExceededException.inTensor(tensor, "quant state JSON: " + e.getOriginalMessage());
        } catch (JacksonException e) {
            throw MalformedFileException.inTensor(tensor, "quant state is not valid JSON: "
                    + e.getOriginalMessage().lines().findFirst().orElse("parse error"));
        }
        if (root == null || !root.isObject()) {
            throw MalformedFileException.inTensor(tensor, "quant state is not a JSON object");
        }
        String quantType = text(tensor, root, "quant_type").toLowerCase(Locale.ROOT);
        if (!quantType.equals("nf4") && !quantType.equals("fp4")) {
            throw UnsupportedFeatureException.inTensor(tensor, "quant_type '" + quantType + "' is not nf4 or fp4");
        }
        int blocksize = blocksize(tensor, root, "blocksize");
        String dtype = floatDtype(tensor, text(tensor, root, "dtype"));
        Shape shape = shape(tensor, root.get("shape"), limits);

        Optional<Nested> nested = Optional.empty();
        if (root.has("nested_blocksize") || root.has("nested_offset") || root.has("nested_dtype")) {
            int nestedBlocksize = blocksize(tensor, root, "nested_blocksize");
            String nestedDtype = floatDtype(tensor, text(tensor, root, "nested_dtype"));
            JsonNode off = root.get("nested_offset");
            if (off == null || !off.isNumber()) {
                throw MalformedFileException.inTensor(tensor, "quant state lacks a numeric nested_offset");
            }
            // The reference does torch.tensor(float(nested_offset)): a float32, round to nearest.
            float offset = (float) off.asDouble();
            if (!Float.isFinite(offset)) {
                throw MalformedFileException.inTensor(tensor, "nested_offset " + off.asText() + " is not a finite float32");
            }
            nested = Optional.of(new Nested(nestedBlocksize, nestedDtype, offset));
        }
        return new QuantState(quantType, blocksize, dtype, shape, nested);
    }

    private static ObjectMapper mapper(ParseLimits limits) {
        StreamReadConstraints constraints = StreamReadConstraints.builder()
                .maxNestingDepth(Math.max(1, limits.maxNestingDepth()))
                .maxStringLength((int) Math.min(Integer.MAX_VALUE, Math.max(1, limits.maxStringBytes())))
                .maxNumberLength(64)
                .build();
        return JsonMapper.builder(JsonFactory.builder().streamReadConstraints(constraints).build())
                .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
                .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                .build();
    }

    private static String text(String tensor, JsonNode root, String key) {
        JsonNode n = root.get(key);
        if (n == null || !n.isTextual()) {
            throw MalformedFileException.inTensor(tensor, "quant state lacks a string '" + key + "'");
        }
        return n.asText();
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
    private static int blocksize(String tensor, JsonNode root, String key) {
        JsonNode n = root.get(key);
        if (n == null || !n.isIntegralNumber() || !n.canConvertToLong()) {
            throw MalformedFileException.inTensor(tensor, "quant state lacks an integer '" + key + "'");
        }
        long v = n.asLong();
        if (v < MIN_BLOCKSIZE || v > MAX_BLOCKSIZE || Long.bitCount(v) != 1) {
            throw MalformedFileException.inTensor(tensor, key + " " + n.asText()
                    + " is not a block size bitsandbytes uses (a power of two from " + MIN_BLOCKSIZE
                    + " to " + MAX_BLOCKSIZE + ")");
        }
        return (int) v;
    }

    private static Shape shape(String tensor, JsonNode n, ParseLimits limits) {
        if (n == null || !n.isArray()) {
            throw MalformedFileException.inTensor(tensor, "quant state lacks a 'shape' array");
        }
        ParseLimits.check("rank of the quant state shape of " + tensor, n.size(), limits.maxRank());
        long[] dims = new long[n.size()];
        for (int i = 0; i < dims.length; i++) {
            JsonNode d = n.get(i);
            if (!d.isIntegralNumber() || !d.canConvertToLong() || d.asLong() < 0) {
                throw MalformedFileException.inTensor(tensor, "quant state shape " + n + " holds "
                        + d + ", not a non-negative integer");
            }
            dims[i] = d.asLong();
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
