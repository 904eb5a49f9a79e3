package io.anamnesis.format.safetensors;

import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.json.TypedJson;
import io.anamnesis.api.write.AtomicOutput;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.write.TensorDataWriter;
import io.anamnesis.api.spi.WriteOptions;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;

/**
 * Writes {@code .safetensors}: the header is laid out from the plan alone (tensors in plan
 * order, contiguous {@code data_offsets}, {@code __metadata__} when the plan has metadata,
 * spaces up to a multiple of 8 bytes so the data section is 8-byte aligned, as the reference
 * writer pads), then the tensors' producers fill their regions in parallel through
 * {@link TensorDataWriter}. Nothing is held in heap but the header; the file appears complete
 * or not at all.
 *
 * <p>Metadata is the plan's {@link OutputPlan#keyValues()}, whole. {@code __metadata__} values
 * must be strings, so when any value is typed (a GGUF key/value: an integer or float of any
 * width, a bool, an array) the file uses the {@code typed-json/1} encoding
 * ({@link io.anamnesis.api.json.TypedJson}, {@code docs/metadata.md}): the key
 * {@code anamnesis.metadata_encoding} = {@code typed-json/1} first, then each key under its own
 * name, a typed value as the JSON text of <code>{"type":"u32","value":15}</code>,
 * <code>{"type":"f32","value":1.0E-5}</code> (the shortest decimal of the float32),
 * <code>{"type":"array","item_type":"string","value":[...]}</code> (whole, however long), and a
 * string as itself (in the typed form only when it starts with <code>{</code>). A plan of strings only
 * is written as plain strings, as before. The reader decodes it back to the same types and bits.
 */
public final class SafetensorsWriter implements FormatWriter {

    @Override
    public String format() {
        return "safetensors";
    }

    @Override
    public List<String> fileExtensions() {
        return List.of("safetensors");
    }

    @Override
    public String description() {
        return "Hugging Face safetensors: streaming, parallel, atomic; every spec dtype";
    }

    /** The dtypes of the safetensors spec; block-quantized dtypes have no spelling in it. */
    @Override
    public boolean supports(DType dtype) {
        return DType.SAFETENSORS.contains(dtype);
    }

    /** Every value is stored whole (typed ones in the typed encoding), except a copy of the encoding's own marker. */
    @Override
    public SequencedMap<String, String> metadataLoss(OutputPlan plan) {
        SequencedMap<String, String> out = new LinkedHashMap<>();
        if (plan.keyValues().containsKey(TypedJson.MARKER_KEY)) {
            out.put(TypedJson.MARKER_KEY, "the key is reserved for the writer's own marker of the typed encoding");
        }
        return out;
    }

    @Override
    public void write(OutputPlan plan, Path target, WriteOptions options) {
        for (PlannedTensor t : plan.tensors()) {
            if (!supports(t.dtype())) {
                throw UnsupportedFeatureException.inTensor(t.name(), "safetensors cannot store dtype " + t.dtype()
                        + " (supported: " + String.join(", ", DType.SAFETENSORS.stream().map(DType::name).toList()) + ")");
            }
        }
        byte[] header = header(plan);
        List<TensorDataWriter.Region> regions = new ArrayList<>(plan.tensors().size());
        long dataStart = SafetensorsHeader.PREFIX_BYTES + (long) header.length;
        long offset = dataStart;
        for (PlannedTensor t : plan.tensors()) {
            regions.add(new TensorDataWriter.Region(offset, t));
            offset = Math.addExact(offset, t.byteSize());
        }
        long fileSize = offset;
        ByteBuffer prefixAndHeader = ByteBuffer.allocate(SafetensorsHeader.PREFIX_BYTES + header.length)
                .order(ByteOrder.LITTLE_ENDIAN)
                .putLong(header.length)
                .put(header)
                .flip();
        AtomicOutput.write(target, channel -> {
            TensorDataWriter.writeFully(channel, prefixAndHeader, 0);
            TensorDataWriter.write(channel, regions, options);
            if (channel.size() != fileSize) {
                throw new TensorIOException("wrote " + channel.size() + " bytes to " + target + ", expected " + fileSize);
            }
        });
    }

    /**
     * The JSON header, UTF-8, padded with spaces to a multiple of 8 bytes.
     *
     * @throws UnsupportedFeatureException for a name or value that is not valid Unicode, or a
     *         tensor named {@code __metadata__}
     * @throws LimitExceededException      when the header would exceed the 100 MB that readers accept
     */
    static byte[] header(OutputPlan plan) {
        StringBuilder json = new StringBuilder(64 + 96 * plan.tensors().size());
        json.append('{');
        boolean first = true;
        Map<String, String> metadata = TypedMetadata.encode(plan.keyValues());
        if (!metadata.isEmpty()) {
            json.append('"').append(SafetensorsHeader.METADATA_KEY).append("\":{");
            boolean firstEntry = true;
            for (Map.Entry<String, String> e : metadata.entrySet()) {
                if (!firstEntry) json.append(',');
                firstEntry = false;
                string(json, e.getKey(), null);
                json.append(':');
                string(json, e.getValue(), null);
            }
            json.append('}');
            first = false;
        }
        long offset = 0;
        for (PlannedTensor t : plan.tensors()) {
            if (t.name().equals(SafetensorsHeader.METADATA_KEY)) {
                throw UnsupportedFeatureException.inTensor(t.name(), "a tensor cannot be named "
                        + SafetensorsHeader.METADATA_KEY + ", the key safetensors reserves for metadata");
            }
            if (!first) json.append(',');
            first = false;
            string(json, t.name(), t.name());
            json.append(":{\"dtype\":\"").append(t.dtype().name()).append("\",\"shape\":[");
            long[] dims = t.shape().toArray();
            for (int i = 0; i < dims.length; i++) {
                if (i > 0) json.append(',');
                json.append(dims[i]);
            }
            long end = Math.addExact(offset, t.byteSize());
            json.append("],\"data_offsets\":[").append(offset).append(',').append(end).append("]}");
            offset = end;
        }
        json.append('}');
        byte[] utf8 = json.toString().getBytes(StandardCharsets.UTF_8);
        int padded = (utf8.length + 7) & ~7;
        long max = ParseLimits.defaults().maxHeaderBytes();
        if (padded > max) {
            throw new LimitExceededException("the safetensors header would be " + padded
                    + " bytes, over the " + max + " that readers accept");
        }
        byte[] out = java.util.Arrays.copyOf(utf8, padded);
        java.util.Arrays.fill(out, utf8.length, padded, (byte) ' ');
        return out;
    }

    /** A JSON string (RFC 8259): quote, backslash and control characters escaped, the rest as is. */
    private static void string(StringBuilder json, String s, String tensor) {
        json.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isSurrogate(c)) {
                // A lone surrogate has no UTF-8 form; serde_json would refuse an escaped one.
                boolean paired = Character.isHighSurrogate(c) && i + 1 < s.length()
                        && Character.isLowSurrogate(s.charAt(i + 1));
                if (!paired) {
                    String msg = "'" + s.replace(c, '?') + "' holds an unpaired UTF-16 surrogate, which UTF-8 cannot encode";
                    throw tensor == null ? new UnsupportedFeatureException("metadata " + msg)
                            : UnsupportedFeatureException.inTensor(tensor, "name " + msg);
                }
                json.append(c).append(s.charAt(++i));
                continue;
            }
            switch (c) {
                case '"' -> json.append("\\\"");
                case '\\' -> json.append("\\\\");
                case '\n' -> json.append("\\n");
                case '\r' -> json.append("\\r");
                case '\t' -> json.append("\\t");
                case '\b' -> json.append("\\b");
                case '\f' -> json.append("\\f");
                default -> {
                    if (c < 0x20) {
                        json.append("\\u00").append(Character.forDigit(c >> 4, 16)).append(Character.forDigit(c & 0xF, 16));
                    } else {
                        json.append(c);
                    }
                }
            }
        }
        json.append('"');
    }
}
