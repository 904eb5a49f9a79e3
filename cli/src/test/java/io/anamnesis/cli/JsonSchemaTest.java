package io.anamnesis.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.anamnesis.api.Anamnesis;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import static io.anamnesis.cli.Runs.amn;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every command's JSON against the one documented schema, {@code docs/schema/amn-output.schema.json}
 * (issue 8, item 9), with a validator for the part of JSON Schema 2020-12 that file uses: no
 * schema library for a dozen keywords.
 */
class JsonSchemaTest {
    @TempDir
    static Path dir;

    static JsonNode schema;
    static final ObjectMapper JSON = new ObjectMapper();

    @BeforeAll
    static void loadSchema() throws IOException {
        // the module's folder is the working directory of its tests
        schema = JSON.readTree(Path.of("..", "docs", "schema", "amn-output.schema.json").toFile());
    }

    // ---------------------------------------------------------------- the validator

    /** Where {@code value} breaks {@code s}, as JSON pointers with the reason; empty when it fits. */
    static List<String> validate(JsonNode s, JsonNode value, String at) {
        List<String> errors = new ArrayList<>();
        if (s.has("$ref")) {
            String ref = s.get("$ref").asText();
            if (!ref.startsWith("#/")) throw new IllegalArgumentException("only local $refs: " + ref);
            errors.addAll(validate(schema.at(ref.substring(1)), value, at));
        }
        if (s.has("oneOf")) {
            int matches = 0;
            List<String> why = new ArrayList<>();
            for (JsonNode option : s.get("oneOf")) {
                List<String> e = validate(option, value, at);
                if (e.isEmpty()) matches++;
                else why.add(e.getFirst());
            }
            if (matches != 1) errors.add(at + ": matches " + matches + " of oneOf " + why);
        }
        if (s.has("allOf")) for (JsonNode part : s.get("allOf")) errors.addAll(validate(part, value, at));
        if (s.has("const") && !s.get("const").equals(value)) errors.add(at + ": is " + value + ", not " + s.get("const"));
        if (s.has("enum")) {
            boolean any = false;
            for (JsonNode e : s.get("enum")) any |= e.equals(value);
            if (!any) errors.add(at + ": " + value + " is not one of " + s.get("enum"));
        }
        if (s.has("type") && !typeMatches(s.get("type"), value)) errors.add(at + ": " + value.getNodeType() + " is not " + s.get("type"));
        if (s.has("minimum") && value.isNumber() && value.asDouble() < s.get("minimum").asDouble()) {
            errors.add(at + ": " + value + " < " + s.get("minimum"));
        }
        if (value.isObject()) {
            JsonNode props = s.get("properties");
            if (s.has("required")) {
                for (JsonNode r : s.get("required")) if (!value.has(r.asText())) errors.add(at + ": no " + r.asText());
            }
            for (Iterator<Map.Entry<String, JsonNode>> it = value.properties().iterator(); it.hasNext(); ) {
                var e = it.next();
                String where = at + "/" + e.getKey();
                if (s.has("propertyNames")) {
                    String pattern = s.get("propertyNames").get("pattern").asText();
                    if (!e.getKey().matches(pattern)) errors.add(where + ": key does not match " + pattern);
                }
                if (props != null && props.has(e.getKey())) {
                    errors.addAll(validate(props.get(e.getKey()), e.getValue(), where));
                } else if (s.has("additionalProperties")) {
                    JsonNode extra = s.get("additionalProperties");
                    if (extra.isBoolean()) {
                        if (!extra.asBoolean()) errors.add(where + ": not allowed");
                    } else {
                        errors.addAll(validate(extra, e.getValue(), where));
                    }
                }
            }
        }
        if (value.isArray() && s.has("items")) {
            for (int i = 0; i < value.size(); i++) errors.addAll(validate(s.get("items"), value.get(i), at + "/" + i));
        }
        return errors;
    }

    private static boolean typeMatches(JsonNode type, JsonNode value) {
        if (type.isArray()) {
            for (JsonNode t : type) if (typeMatches(t, value)) return true;
            return false;
        }
        return switch (type.asText()) {
            case "object" -> value.isObject();
            case "array" -> value.isArray();
            case "string" -> value.isTextual();
            case "integer" -> value.isIntegralNumber();
            case "number" -> value.isNumber();
            case "boolean" -> value.isBoolean();
            case "null" -> value.isNull();
            default -> throw new IllegalArgumentException("type " + type);
        };
    }

    static void assertValid(Runs.Run r) throws IOException {
        assertThat(r.code()).as(r.err()).isZero();
        JsonNode json = r.json();
        assertThat(validate(schema, json, "")).as(json.toPrettyString()).isEmpty();
    }

    // ---------------------------------------------------------------- inputs

    static byte[] safetensors(String json, int dataBytes) {
        byte[] j = json.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(8 + j.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN).putLong(j.length).put(j).array();
    }

    /** GGUF v3 with a string, an integer, a float array of 100 and a string array, and one F32 tensor. */
    static byte[] gguf() {
        ByteBuffer b = ByteBuffer.allocate(4096).order(ByteOrder.LITTLE_ENDIAN);
        b.put("GGUF".getBytes(StandardCharsets.US_ASCII)).putInt(3).putLong(1).putLong(4);
        string(b, "general.architecture");
        b.putInt(8);
        string(b, "llama");
        string(b, "llama.context_length");
        b.putInt(4).putInt(4096);
        string(b, "scores");
        b.putInt(9).putInt(6).putLong(100);
        for (int i = 0; i < 100; i++) b.putFloat(i / 4f);
        string(b, "tokenizer.ggml.tokens");
        b.putInt(9).putInt(8).putLong(2);
        string(b, "a");
        string(b, "b");
        string(b, "w");
        b.putInt(1).putLong(4).putInt(0).putLong(0);
        while (b.position() % 32 != 0) b.put((byte) 0);
        b.position(b.position() + 16);
        return java.util.Arrays.copyOf(b.array(), b.position());
    }

    private static void string(ByteBuffer b, String s) {
        byte[] u = s.getBytes(StandardCharsets.UTF_8);
        b.putLong(u.length).put(u);
    }

    static List<Path> inputs() throws IOException {
        return List.of(
                Files.write(dir.resolve("plain.safetensors"), safetensors("{\"__metadata__\":{\"format\":\"pt\"},"
                        + "\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", 24)),
                Files.write(dir.resolve("fp8.safetensors"), safetensors("{\"l.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[4,8],"
                        + "\"data_offsets\":[0,32]},\"l.weight_scale\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[32,36]}}", 36)),
                Files.write(dir.resolve("orphan.safetensors"), safetensors("{\"x.weight_scale\":{\"dtype\":\"F32\","
                        + "\"shape\":[],\"data_offsets\":[0,4]}}", 4)),
                Files.write(dir.resolve("model.gguf"), gguf()),
                shardedFolder());
    }

    /** A model folder: an FP8 weight in one shard, its scale in the other, and the index. */
    static Path shardedFolder() throws IOException {
        Path folder = Files.createDirectories(dir.resolve("sharded"));
        Files.write(folder.resolve("model-00001-of-00002.safetensors"), safetensors("{\"l.weight\":{\"dtype\":\"F8_E4M3\","
                + "\"shape\":[4,8],\"data_offsets\":[0,32]}}", 32));
        Files.write(folder.resolve("model-00002-of-00002.safetensors"), safetensors("{\"l.weight_scale\":{\"dtype\":\"F32\","
                + "\"shape\":[],\"data_offsets\":[0,4]}}", 4));
        Files.writeString(folder.resolve("model.safetensors.index.json"), "{\"metadata\":{\"total_size\":36},\"weight_map\":{"
                + "\"l.weight\":\"model-00001-of-00002.safetensors\",\"l.weight_scale\":\"model-00002-of-00002.safetensors\"}}");
        return folder;
    }

    @Test
    void aModelFolderListsItsShards() throws IOException {
        Path folder = shardedFolder();
        JsonNode inspect = amn(Anamnesis.installed(), "inspect", "--json", folder.toString()).json();
        assertThat(inspect.get("index").asText()).isEqualTo("model.safetensors.index.json");
        assertThat(inspect.get("shards")).hasSize(2);
        assertThat(inspect.get("shards").get(1).get("file").asText()).isEqualTo("model-00002-of-00002.safetensors");
        assertThat(inspect.get("shards").get(1).get("stored_bytes").asLong()).isEqualTo(4);
        assertThat(inspect.get("tensor_count").asInt()).isEqualTo(2);
        assertThat(inspect.get("roles").get("scale").asInt()).isEqualTo(1);
    }

    // ---------------------------------------------------------------- the checks

    @Test
    void everyCommandsJsonFitsTheSchema() throws IOException {
        Anamnesis installed = Anamnesis.installed();
        assertValid(amn(installed, "formats", "--json"));
        for (Path in : inputs()) {
            assertValid(amn(installed, "parse", "--json", in.toString()));
            Runs.Run inspect = amn(installed, "inspect", "--json", in.toString());
            if (in.getFileName().toString().startsWith("orphan")) {
                assertThat(inspect.code()).isZero(); // problems are warnings in inspect
            }
            assertValid(inspect);
            assertValid(amn(installed, "inspect", "--json", "--full", in.toString()));
            assertValid(amn(installed, "inspect", "--json", "--to", "f32", in.toString()));
        }
    }

    @Test
    void theFakeModulesJsonFitsTooWithRolesUnknown() throws IOException {
        Path ok = Fakes.write(dir, "model.fake", "ok");
        assertValid(amn(Fakes.amn(), "parse", "--json", ok.toString()));
        assertValid(amn(Fakes.amn(), "inspect", "--json", ok.toString()));
        assertValid(amn(Fakes.amn(), "formats", "--json"));
    }

    @Test
    void valuesAreTypedAndKeysSnakeCase() throws IOException {
        Path g = inputs().get(3);
        JsonNode inspect = amn(Anamnesis.installed(), "inspect", "--json", g.toString()).json();
        assertThat(inspect.get("properties").get("version").isIntegralNumber()).isTrue();
        assertThat(inspect.get("properties").get("version").asInt()).isEqualTo(3);
        assertThat(inspect.get("properties").has("byte_order")).isTrue();
        assertThat(inspect.get("metadata").get("llama.context_length").isIntegralNumber()).isTrue();
        JsonNode parse = amn(Anamnesis.installed(), "parse", "--json", g.toString()).json();
        assertThat(parse.get("metadata").get("llama.context_length")).isEqualTo(inspect.get("metadata").get("llama.context_length"));
        assertThat(parse.get("schema_version").asInt()).isEqualTo(Report.SCHEMA_VERSION);
    }

    @Test
    void theValidatorRejectsWhatTheSchemaForbids() throws IOException {
        Path in = inputs().getFirst();
        JsonNode good = amn(Anamnesis.installed(), "inspect", "--json", in.toString()).json();
        assertThat(validate(schema, good, "")).isEmpty();
        var spaced = good.deepCopy();
        ((com.fasterxml.jackson.databind.node.ObjectNode) spaced.get("properties")).put("byte order", "little-endian");
        assertThat(validate(schema, spaced, "")).isNotEmpty();
        var extra = good.deepCopy();
        ((com.fasterxml.jackson.databind.node.ObjectNode) extra).put("surprise", 1);
        assertThat(validate(schema, extra, "")).isNotEmpty();
        var stringCount = good.deepCopy();
        ((com.fasterxml.jackson.databind.node.ObjectNode) stringCount).put("tensor_count", "1");
        assertThat(validate(schema, stringCount, "")).isNotEmpty();
    }
}
