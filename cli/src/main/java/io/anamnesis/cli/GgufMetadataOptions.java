package io.anamnesis.cli;

import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.json.TypedJson;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;

/**
 * {@code convert --to gguf}'s typed key/values set on the command line: {@code --gguf-metadata}
 * (a JSON file) first, then each {@code --gguf-kv} over it, all over what the input carries.
 * Every bad value is a usage error naming its key.
 */
final class GgufMetadataOptions {
    static final String TYPES = "u8, i8, u16, i16, u32, i32, u64, i64, f32, f64, bool, str";

    @Option(names = "--gguf-kv", paramLabel = "<key=type:value>",
            description = "Set a typed GGUF key/value (repeatable; --to gguf only): TYPE is one of " + TYPES
                    + ", e.g. general.architecture=str:llama, llama.context_length=u32:4096, "
                    + "llama.attention.layer_norm_rms_epsilon=f32:1e-5. Wins over --gguf-metadata and the input.")
    List<String> keyValues = new ArrayList<>();

    @Option(names = "--gguf-metadata", paramLabel = "<file.json>",
            description = "Set typed GGUF key/values from a JSON object (--to gguf only): key -> {\"type\": T, "
                    + "\"value\": V}, arrays as {\"type\": \"array\", \"item_type\": T, \"value\": [...]} (the "
                    + "typed-json/1 encoding of docs/metadata.md); a plain JSON value gets an inferred type (string, "
                    + "bool, integer u32, number f32, array of its first element's type). Wins over the input.")
    Path file;

    boolean isEmpty() {
        return keyValues.isEmpty() && file == null;
    }

    /**
     * The key/values to set, in the order given.
     *
     * @throws UsageException for a file that cannot be decoded, or a --gguf-kv that is not KEY=TYPE:VALUE
     * @throws io.anamnesis.api.TensorIOException for a file that is missing or cannot be read (exit 7, as any input)
     */
    SequencedMap<String, MetaValue> values() {
        SequencedMap<String, MetaValue> out = new LinkedHashMap<>();
        if (file != null) out.putAll(readFile(file));
        for (String kv : keyValues) {
            int eq = kv.indexOf('=');
            if (eq <= 0) throw new UsageException("--gguf-kv '" + kv + "' is not KEY=TYPE:VALUE");
            String key = kv.substring(0, eq);
            String rest = kv.substring(eq + 1);
            int colon = rest.indexOf(':');
            String spelling = colon < 0 ? rest : rest.substring(0, colon);
            MetaValue.Type type = TypedJson.type(spelling).orElseThrow(() -> new UsageException("--gguf-kv " + key
                    + ": " + (colon < 0 ? "'" + rest + "' gives no TYPE:VALUE" : "unknown type '" + spelling + "'")
                    + " (types: " + TYPES + ")"));
            if (type == MetaValue.Type.ARRAY) {
                throw new UsageException("--gguf-kv " + key + ": arrays are set with --gguf-metadata FILE.json");
            }
            if (colon < 0) throw new UsageException("--gguf-kv " + key + ": '" + rest + "' gives no value after TYPE:");
            try {
                out.remove(key);  // a key set again goes where the last setting puts it
                out.put(key, TypedJson.scalar(type, rest.substring(colon + 1)));
            } catch (IllegalArgumentException e) {
                throw new UsageException("--gguf-kv " + key + ": " + e.getMessage());
            }
        }
        return out;
    }

    private static SequencedMap<String, MetaValue> readFile(Path file) {
        ParseLimits limits = ParseLimits.defaults();
        String text;
        try {
            long size = Files.size(file);
            if (size > limits.maxHeaderBytes()) {
                throw new UsageException("--gguf-metadata " + file + " holds " + size + " bytes, over the limit of "
                        + limits.maxHeaderBytes());
            }
            text = StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(Files.readAllBytes(file))).toString();
        } catch (CharacterCodingException e) {
            throw new UsageException("--gguf-metadata " + file + " is not UTF-8 text");
        } catch (java.nio.file.NoSuchFileException e) {
            throw new io.anamnesis.api.TensorIOException("--gguf-metadata: " + file + " does not exist", e);
        } catch (IOException e) {
            throw new io.anamnesis.api.TensorIOException("--gguf-metadata: cannot read " + file + ": " + e.getMessage(), e);
        }
        try {
            return TypedJson.decodeObject(text, limits);
        } catch (AnamnesisException e) {
            throw new UsageException("--gguf-metadata " + file + ": " + e.getMessage());
        }
    }
}
