package io.anamnesis.cli;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.model.ModelLayout;
import io.anamnesis.api.model.ShardedArchive;
import io.anamnesis.api.spi.RangeChannel;

import java.io.IOException;
import java.net.http.HttpClient;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The remote inputs of {@code parse} and {@code inspect}: a file's headers read through HTTP
 * range requests ({@link HttpRanges}), parsed by the format modules' own header code through
 * a {@link RangeChannel} ({@link io.anamnesis.api.Anamnesis#openHeader(RangeChannel, ParseLimits)}),
 * or an index ({@code *.index.json}) whose {@code weight_map} names the shards, every
 * shard's headers read the same way. The archive is headers-only. With {@code --debug} the
 * requests and bytes are reported.
 *
 * <p>Why here and not in the api: fetching is a CLI input kind, like {@code ollama:}; the api
 * stays free of {@code java.net.http} and of any transport, and gives the formats what they
 * need, a channel that fetches by position. The format knowledge stays in the format modules.
 */
final class Remote {
    private Remote() {
    }

    /** An index of shards: transformers' {@code model.safetensors.index.json}, {@code pytorch_model.bin.index.json}. */
    static boolean isIndex(String fileName) {
        return fileName.toLowerCase(java.util.Locale.ROOT).endsWith(".index.json");
    }

    static TensorArchive open(String reference, Amn.Context ctx) {
        RemoteRef ref = RemoteRef.parse(reference, ctx.env());
        Duration timeout = timeout(ctx.env());
        ParseLimits limits = ParseLimits.defaults();
        HttpRanges.Stats stats = new HttpRanges.Stats();
        HttpClient client = HttpRanges.newClient(timeout);
        try {
            return isIndex(ref.fileName())
                    ? openIndex(ref, ctx, client, timeout, stats, limits)
                    : openFile(ref, ctx, client, timeout, stats, limits);
        } finally {
            client.shutdownNow();
            // what the run cost, also when it failed; the token is in no reference
            if (ctx.debug()) {
                ctx.err().println("amn: " + reference + ": " + stats.requests + " requests (" + stats.redirects
                        + " redirects), " + stats.bytes + " bytes fetched");
                ctx.err().flush();
            }
        }
    }

    private static TensorArchive openFile(RemoteRef ref, Amn.Context ctx, HttpClient client, Duration timeout,
                                          HttpRanges.Stats stats, ParseLimits limits) {
        HttpRanges http = new HttpRanges(client, ref, timeout, stats);
        HttpRanges.Head head = http.first();
        RangeChannel channel = new RangeChannel(ref.fileName(), head.size(), head.bytes(), http, budget(limits));
        TensorArchive archive = ctx.amn().openHeader(channel, limits);
        Log.debug("{}: {} bytes, {} archive, {} fetches after the first", ref, head.size(), archive.format(), channel.fetches());
        return archive;
    }

    /**
     * What the headers of one file may cost: as much as a header and a pickle may hold. The
     * readahead stays inside it.
     */
    static long budget(ParseLimits limits) {
        long b = limits.maxHeaderBytes() + limits.maxPickleBytes();
        return b < 0 ? Long.MAX_VALUE : b;
    }

    /**
     * The index whole, then every shard it names, in name order, as one {@link ShardedArchive}
     * (the checks of a local model: a tensor in two shards, one the index places in a shard
     * that lacks it), and the model's {@code config.json} beside the index, which is what says
     * how a model is quantized. GPTQ's {@code quantize_config.json} and AutoAWQ's
     * {@code quant_config.json} are asked for only when {@code config.json} has no
     * {@code quantization_config}: older checkpoints kept it there.
     */
    private static TensorArchive openIndex(RemoteRef ref, Amn.Context ctx, HttpClient client, Duration timeout,
                                           HttpRanges.Stats stats, ParseLimits limits) {
        Map<String, List<String>> placed = shardsOf(ref, readWhole(ref, client, timeout, stats, limits, false).orElseThrow());
        Map<String, String> weightMap = new LinkedHashMap<>();
        Map<Path, String> shardOfFile = new LinkedHashMap<>();
        placed.forEach((shard, tensors) -> {
            Path file = Path.of(shard);
            shardOfFile.put(file, shard);
            // the model's checks compare file names: a shard in a subfolder is named by its last segment
            for (String t : tensors) weightMap.put(t, String.valueOf(file.getFileName()));
        });
        ModelLayout layout = new ModelLayout(Optional.empty(), Optional.of(Path.of(ref.fileName())),
                List.copyOf(shardOfFile.keySet()), weightMap, List.of());
        Map<String, String> companions = companions(ref, ctx, client, timeout, stats, limits);
        return ShardedArchive.open(layout, file -> new ShardedArchive.Shard(file,
                openFile(ref.sibling(shardOfFile.get(file), ctx.env()), ctx, client, timeout, stats, limits), Optional.empty()),
                companions);
    }

    /** The config files beside an index that are there (see {@link #openIndex}); one request each. */
    private static Map<String, String> companions(RemoteRef index, Amn.Context ctx, HttpClient client, Duration timeout,
                                                  HttpRanges.Stats stats, ParseLimits limits) {
        Map<String, String> found = new LinkedHashMap<>();
        Optional<String> config = text(index.sibling("config.json", ctx.env()), client, timeout, stats, limits);
        config.ifPresent(c -> found.put("config.json", c));
        if (config.isEmpty() || !hasQuantizationConfig(config.get())) {
            for (String legacy : List.of("quantize_config.json", "quant_config.json")) {
                text(index.sibling(legacy, ctx.env()), client, timeout, stats, limits).ifPresent(c -> found.put(legacy, c));
            }
        }
        return found;
    }

    private static Optional<String> text(RemoteRef ref, HttpClient client, Duration timeout, HttpRanges.Stats stats,
                                         ParseLimits limits) {
        return readWhole(ref, client, timeout, stats, limits, true).map(b -> {
            try {
                return StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(b)).toString();
            } catch (CharacterCodingException e) {
                throw new MalformedFileException(ref + " is not valid UTF-8");
            }
        });
    }

    /** Whether a config's JSON has a quantization_config object; a config that does not parse is left to the dequantizers to judge. */
    private static boolean hasQuantizationConfig(String configJson) {
        try {
            return Json.parse(configJson.getBytes(StandardCharsets.UTF_8), 64) instanceof Map<?, ?> m
                    && m.get("quantization_config") instanceof Map<?, ?>;
        } catch (IOException e) {
            return false;
        }
    }

    /** A whole small file: the first probe, and the rest in one range when it is longer. */
    private static Optional<byte[]> readWhole(RemoteRef ref, HttpClient client, Duration timeout, HttpRanges.Stats stats,
                                              ParseLimits limits, boolean mayBeAbsent) {
        HttpRanges http = new HttpRanges(client, ref, timeout, stats);
        Optional<HttpRanges.Head> found = mayBeAbsent ? http.firstIfFound() : Optional.of(http.first());
        if (found.isEmpty()) return Optional.empty();
        HttpRanges.Head head = found.get();
        ParseLimits.check("size of " + ref.fileName(), head.size(), Math.min(limits.maxHeaderBytes(), Integer.MAX_VALUE - 8));
        if (head.bytes().length == head.size()) return Optional.of(head.bytes());
        byte[] rest = http.fetch(head.bytes().length, (int) (head.size() - head.bytes().length));
        byte[] all = java.util.Arrays.copyOf(head.bytes(), (int) head.size());
        System.arraycopy(rest, 0, all, head.bytes().length, rest.length);
        return Optional.of(all);
    }

    /** The shards of an index and the tensors it places in each, shards in name order. */
    static Map<String, List<String>> shardsOf(RemoteRef ref, byte[] json) {
        Object root;
        try {
            root = Json.parse(json, 64);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new MalformedFileException(ref + " is not valid JSON: " + Amn.oneLine(e.getOriginalMessage()), e);
        } catch (IOException e) {
            throw new TensorIOException("cannot read " + ref + ": " + e.getMessage(), e);
        }
        if (!(root instanceof Map<?, ?> m) || !(m.get("weight_map") instanceof Map<?, ?> weights)) {
            throw new MalformedFileException(ref + " has no weight_map object: not a shard index");
        }
        Map<String, List<String>> shards = new TreeMap<>();
        for (var e : weights.entrySet()) {
            if (!(e.getValue() instanceof String shard)) {
                throw new MalformedFileException(ref + ": weight_map entry '" + e.getKey() + "' is not a file name");
            }
            checkShardName(ref, shard);
            shards.computeIfAbsent(shard, k -> new ArrayList<>()).add((String) e.getKey());
        }
        if (shards.isEmpty()) throw new MalformedFileException(ref + ": weight_map is empty");
        return shards;
    }

    /** A shard is a file beside the index (or below it): never another host, never above it. */
    private static void checkShardName(RemoteRef ref, String shard) {
        boolean bad = shard.isEmpty() || shard.startsWith("/") || shard.contains("\\") || shard.contains(":")
                || shard.contains("?") || shard.contains("#");
        for (String s : shard.split("/", -1)) bad |= s.isEmpty() || s.equals(".") || s.equals("..");
        if (bad) throw new MalformedFileException(ref + ": weight_map names '" + shard + "', not a file beside the index");
    }

    /** {@code AMN_HTTP_TIMEOUT}: seconds each exchange may take (default 30). */
    static Duration timeout(Map<String, String> env) {
        String s = env.get("AMN_HTTP_TIMEOUT");
        if (s == null || s.isBlank()) return HttpRanges.DEFAULT_TIMEOUT;
        try {
            double seconds = Double.parseDouble(s.strip());
            if (!(seconds > 0) || seconds > 86_400) throw new NumberFormatException();
            return Duration.ofMillis(Math.max(1, (long) (seconds * 1000)));
        } catch (NumberFormatException e) {
            throw new UsageException("AMN_HTTP_TIMEOUT must be a number of seconds between 0 and 86400, was '" + s + "'");
        }
    }
}
