package io.anamnesis.cli;

import io.anamnesis.api.DType;
import io.anamnesis.api.RecoveryPlan;
import io.anamnesis.api.Role;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.model.ShardedArchive;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@code parse} and {@code inspect} say about a file, computed from its header and
 * the recovery plan alone: no tensor byte is read.
 */
record Report(String input, TensorArchive archive, RecoveryPlan plan, java.util.Optional<String> planError) {
    /** A stored tensor whose role is unknown because no recovery plan could be made. */
    static final Role UNKNOWN = new Role("unknown");

    Report(String input, TensorArchive archive, RecoveryPlan plan) {
        this(input, archive, plan, java.util.Optional.empty());
    }

    /** Roles in the order a reader expects them: payload, companions, then plain tensors. */
    private static final List<Role> ROLE_ORDER = List.of(Role.QUANTIZED, Role.SCALE, Role.ZERO_POINT,
            Role.G_IDX, Role.ABSMAX, Role.QUANT_MAP, Role.QUANT_STATE);

    /** The scheme descriptions joined, or empty for a file of plain tensors. */
    String scheme() {
        return String.join("; ", plan.schemeDescriptions());
    }

    String schemeOrNone() {
        if (planError.isPresent()) return "unknown (no recovery plan: " + planError.get() + ")";
        return plan.schemeDescriptions().isEmpty() ? "none (plain tensors)" : scheme();
    }

    Role roleOf(TensorEntry e) {
        if (planError.isPresent()) return UNKNOWN;
        return plan.roles().getOrDefault(e.name(), Role.PASSTHROUGH);
    }

    /** Tensor counts by role, companions in a fixed order, passthrough last. */
    Map<String, Long> roleCounts() {
        Map<String, Long> seen = new LinkedHashMap<>();
        for (TensorEntry e : archive.tensors()) seen.merge(roleOf(e).name(), 1L, Long::sum);
        Map<String, Long> ordered = new LinkedHashMap<>();
        for (Role r : ROLE_ORDER) {
            Long n = seen.remove(r.name());
            if (n != null) ordered.put(r.name(), n);
        }
        Long passthrough = seen.remove(Role.PASSTHROUGH.name());
        ordered.putAll(seen); // a plugin's own roles
        if (passthrough != null) ordered.put(Role.PASSTHROUGH.name(), passthrough);
        return ordered;
    }

    /** {@code 2 quantized, 2 scale, 3 passthrough}. */
    String roleSummary() {
        List<String> parts = new ArrayList<>();
        roleCounts().forEach((role, n) -> parts.add(n + " " + role));
        return String.join(", ", parts);
    }

    /** Tensor counts by stored dtype, in order of first appearance. */
    Map<String, Long> dtypeCounts() {
        Map<String, Long> out = new LinkedHashMap<>();
        for (TensorEntry e : archive.tensors()) out.merge(e.dtype().name(), 1L, Long::sum);
        return out;
    }

    String dtypeSummary() {
        List<String> parts = new ArrayList<>();
        dtypeCounts().forEach((dtype, n) -> parts.add(dtype + " x" + n));
        return String.join(", ", parts);
    }

    long storedBytes() {
        long sum = 0;
        for (TensorEntry e : archive.tensors()) sum = Math.addExact(sum, e.byteSize());
        return sum;
    }

    DType target() {
        return plan.target();
    }

    long outputBytes() {
        return plan.outputBytes();
    }

    /**
     * The share of the remembered size that quantization had dropped, as inspect puts it:
     * "Lethe took ~47% of the precision". Empty when nothing was dropped.
     */
    String letheLine() {
        long stored = storedBytes();
        long remembered = outputBytes();
        String as = plan.target().name().toLowerCase(java.util.Locale.ROOT);
        if (plan.recoveries().isEmpty() || remembered <= stored || remembered == 0) {
            return "Lethe took nothing: every tensor is stored as it will be read (" + Text.size(stored) + ")";
        }
        double took = 100.0 * (remembered - stored) / remembered;
        return "Lethe took ~" + Text.decimals(took, 0) + "% of the precision: " + Text.size(stored) + " stored, "
                + Text.size(remembered) + " remembered as " + as + " (x" + Text.decimals((double) remembered / Math.max(1, stored), 2) + ")";
    }

    /** The files of a model of several (a folder, an index, shards), in shard order; empty for a single file. */
    List<ShardedArchive.Shard> shards() {
        return archive instanceof ShardedArchive s ? s.shards() : List.of();
    }

    /** Where the model's shards came from: its index, or "by name". */
    String shardSource() {
        return archive instanceof ShardedArchive s
                ? s.layout().index().map(p -> String.valueOf(p.getFileName())).orElse("found by name") : "";
    }

    /** One row per shard, for the JSON of both commands. */
    List<Map<String, Object>> shardRows() {
        List<Map<String, Object>> rows = new ArrayList<>();
        for (ShardedArchive.Shard sh : shards()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("file", String.valueOf(sh.file().getFileName()));
            row.put("tensor_count", sh.archive().tensors().size());
            long bytes = 0;
            for (TensorEntry e : sh.archive().tensors()) bytes = Math.addExact(bytes, e.byteSize());
            row.put("stored_bytes", bytes);
            rows.add(row);
        }
        return rows;
    }

    /** The shard listing as text: one line per file, with its tensors and stored size. */
    List<String> shardLines(String indent) {
        Text.Table t = new Text.Table(new boolean[]{false, true, true}, "", "", "");
        for (Map<String, Object> row : shardRows()) {
            long n = ((Number) row.get("tensor_count")).longValue();
            t.row((String) row.get("file"), Text.count(n) + (n == 1 ? " tensor" : " tensors"),
                    Text.size(((Number) row.get("stored_bytes")).longValue()));
        }
        return t.lines(indent).stream().skip(1).toList();
    }

    /** The JSON fields that list a model's shards, when it has several files. */
    void putShards(Map<String, Object> out) {
        if (!(archive instanceof ShardedArchive s)) return;
        out.put("index", s.layout().index().map(p -> String.valueOf(p.getFileName())).orElse(null));
        out.put("shards", shardRows());
    }

    /** One row per stored tensor, for {@code parse} and {@code parse --json}. */
    List<Map<String, Object>> tensorRows() {
        List<Map<String, Object>> rows = new ArrayList<>();
        for (TensorEntry e : archive.tensors()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("name", e.name());
            row.put("dtype", e.dtype().name());
            List<Long> shape = new ArrayList<>();
            for (long d : e.shape().toArray()) shape.add(d);
            row.put("shape", shape);
            row.put("role", roleOf(e).name());
            row.put("bytes", e.byteSize());
            rows.add(row);
        }
        return rows;
    }

    /**
     * The version of the JSON that {@code parse}, {@code inspect} and {@code formats} print,
     * described by {@code docs/schema/amn-output.schema.json}; raised when a field changes
     * meaning or goes away (new fields do not raise it).
     */
    static final int SCHEMA_VERSION = 1;

    /** The fields every JSON document starts with. */
    static Map<String, Object> jsonHead(String command) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("schema_version", SCHEMA_VERSION);
        out.put("command", command);
        return out;
    }

    /**
     * A format's properties for JSON: keys in snake_case ({@code byte order} becomes
     * {@code byte_order}), whole numbers as numbers and yes/no as booleans; the rest stay text.
     */
    static Map<String, Object> typedProperties(Map<String, String> properties) {
        Map<String, Object> out = new LinkedHashMap<>();
        properties.forEach((k, v) -> out.put(snakeCase(k), typed(v)));
        return out;
    }

    /** By hand, not with a regex: {@code inspect --json} is on the start-up path (docs/benchmarks/cli.md). */
    static String snakeCase(String key) {
        StringBuilder sb = new StringBuilder();
        boolean gap = false;
        for (char c : key.toLowerCase(java.util.Locale.ROOT).toCharArray()) {
            if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
                if (gap && !sb.isEmpty()) sb.append('_');
                sb.append(c);
                gap = false;
            } else {
                gap = true;
            }
        }
        return sb.toString();
    }

    private static boolean wholeNumber(String v) {
        int start = v.startsWith("-") ? 1 : 0;
        if (v.length() == start || v.length() - start > 18) return false;
        for (int i = start; i < v.length(); i++) {
            if (v.charAt(i) < '0' || v.charAt(i) > '9') return false;
        }
        return true;
    }

    private static Object typed(String v) {
        if (wholeNumber(v)) return Long.parseLong(v);
        return switch (v) {
            case "yes", "true" -> Boolean.TRUE;
            case "no", "false" -> Boolean.FALSE;
            default -> v;
        };
    }

    /**
     * The metadata for both commands' JSON: each key typed where the format has a typed value
     * (GGUF), else its text; long arrays summarized unless {@code full}.
     */
    Map<String, Object> metadataJson(boolean full) {
        Map<String, Object> out = new LinkedHashMap<>(archive.metadata());
        out.putAll(archive.structuredMetadata());
        @SuppressWarnings("unchecked") Map<String, Object> summarized = (Map<String, Object>) Json.summarize(out, full);
        return summarized;
    }

    /** {@code parse --json}: one object, format, metadata, scheme, tensors. */
    Map<String, Object> parseJson() {
        Map<String, Object> out = jsonHead("parse");
        out.put("input", input);
        out.put("format", archive.format());
        out.put("metadata", metadataJson(false));
        out.put("scheme", plan.schemeDescriptions().isEmpty() ? null : scheme());
        out.put("schemes", plan.schemeDescriptions());
        out.put("tensor_count", archive.tensors().size());
        out.put("stored_bytes", storedBytes());
        putShards(out);
        out.put("tensors", tensorRows());
        out.put("problems", planError.isPresent() ? List.of(planError.get()) : plan.problems());
        return out;
    }

    /** {@code inspect --json}: the summary plus structured metadata. */
    Map<String, Object> inspectJson(boolean fullMetadata) {
        Map<String, Object> out = jsonHead("inspect");
        out.put("input", input);
        out.put("format", archive.format());
        out.put("scheme", plan.schemeDescriptions().isEmpty() ? null : scheme());
        out.put("schemes", plan.schemeDescriptions());
        out.put("tensor_count", archive.tensors().size());
        out.put("roles", roleCounts());
        out.put("dtypes", dtypeCounts());
        out.put("stored_bytes", storedBytes());
        out.put("output_dtype", plan.target().name());
        out.put("output_tensor_count", plan.outputs().size());
        out.put("output_bytes", outputBytes());
        out.put("properties", typedProperties(archive.properties()));
        putShards(out);
        out.put("problems", plan.problems());
        out.put("metadata", metadataJson(fullMetadata));
        return out;
    }
}
