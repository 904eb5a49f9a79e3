package io.anamnesis.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.TensorIOException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code amn parse} and {@code amn inspect} of URLs against a loopback server the test
 * starts ({@link RangeServer}): the same answers as for the local file, from a few range
 * requests, and a typed error with its exit code for every way a server can fail.
 */
class RemoteTest {
    static final Anamnesis AMN = Anamnesis.installed();
    static final int PROBE = HttpRanges.FIRST_PROBE;

    @TempDir
    Path dir;
    RangeServer server;

    @BeforeEach
    void start() throws IOException {
        server = new RangeServer();
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private Runs.Run amn(Map<String, String> env, String... args) {
        return Runs.amn(AMN, env, dir, true, args);
    }

    private Runs.Run amn(String... args) {
        return amn(Map.of(), args);
    }

    /** {@code parse --json} of the same bytes as a local file, without the input's name. */
    private JsonNode localParse(String name, byte[] bytes) throws IOException {
        Path f = Files.write(dir.resolve(name), bytes);
        Runs.Run r = amn("parse", "--json", f.toString());
        assertThat(r.code()).as(r.err()).isZero();
        return withoutInput(r.json());
    }

    private static JsonNode withoutInput(JsonNode n) {
        ((ObjectNode) n).remove("input");
        return n;
    }

    private JsonNode remoteParse(String url) throws IOException {
        Runs.Run r = amn("parse", "--json", url);
        assertThat(r.code()).as(r.err()).isZero();
        return withoutInput(r.json());
    }

    // ---------------------------------------------------------------- safetensors

    /**
     * The huggingface_hub bug: a header that ends right around the first probe's size. The
     * JSON ends at byte {@code 8 + N}; every {@code N} around {@code PROBE - 8} must parse, in
     * one request when the probe holds the header and two when it does not.
     */
    @ParameterizedTest
    @ValueSource(ints = {-12, -9, -8, -7, -1, 0, 1, 7, 8, 9, 12, 4096})
    void aHeaderEndingAroundTheFirstProbeParses(int delta) throws IOException {
        int headerLength = PROBE - 8 + delta;
        byte[] file = RemoteFiles.safetensorsWithHeaderLength(headerLength);
        server.file("/m.safetensors", file);
        JsonNode remote = remoteParse(server.url("/m.safetensors"));
        assertThat(remote).isEqualTo(localParse("m.safetensors", file));
        assertThat(remote.get("metadata").get("pad").asText()).hasSizeGreaterThan(PROBE - 200);
        assertThat(remote.get("tensors").get(0).get("name").asText()).isEqualTo("t");
        long expected = 8L + headerLength <= PROBE ? 1 : 2;
        assertThat(server.rangeRequests("/m.safetensors")).isEqualTo(expected);
    }

    @Test
    void aTwoMegabyteHeaderCostsTwoRangeRequests() throws IOException {
        byte[] file = RemoteFiles.safetensorsManyTensors(20_000);
        long headerLength = java.nio.ByteBuffer.wrap(file).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong(0);
        assertThat(headerLength).isGreaterThan(2_000_000);
        server.file("/big.safetensors", file);
        Runs.Run r = amn("--debug", "inspect", server.url("/big.safetensors"));
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("20,000");
        assertThat(server.rangeRequests("/big.safetensors")).isLessThanOrEqualTo(2);
        // the debug report: two requests, the header and no more than the first probe past it
        assertThat(r.err()).contains("2 requests (0 redirects)");
        assertThat(fetched(r)).isBetween(8 + headerLength, 8 + headerLength + PROBE);
        assertThat(remoteParse(server.url("/big.safetensors"))).isEqualTo(localParse("big.safetensors", file));
    }

    // ---------------------------------------------------------------- GGUF

    /**
     * 1,000 tensors after a vocabulary of 150,000 tokens (a header of about 2.6 MB, as large
     * as a Llama 3 tokenizer's), then 16 MB of tensor data: the readahead grows fourfold per
     * request, so at most four requests, and the data is not fetched.
     */
    @Test
    void aGgufWithAThousandTensorsCostsAtMostFourRequests() throws IOException {
        byte[] file = RemoteFiles.gguf(1000, 150_000, 4096);
        server.file("/m.gguf", file);
        Runs.Run r = amn("--debug", "parse", "--json", server.url("/m.gguf"));
        assertThat(r.code()).as(r.err()).isZero();
        JsonNode remote = withoutInput(r.json());
        assertThat(remote.get("tensors")).hasSize(1000);
        assertThat(remote.get("tensors").get(999).get("shape").toString()).isEqualTo("[4096]");
        assertThat(remote).isEqualTo(localParse("m.gguf", file));
        assertThat(server.rangeRequests("/m.gguf")).isBetween(2L, 4L);
        assertThat(fetched(r)).isLessThan(file.length / 2);
    }

    @Test
    void aSmallGgufHeaderCostsOneRequest() throws IOException {
        byte[] file = RemoteFiles.gguf(1000, 10, 4096);
        server.file("/small.gguf", file);
        assertThat(remoteParse(server.url("/small.gguf"))).isEqualTo(localParse("small.gguf", file));
        assertThat(server.rangeRequests("/small.gguf")).isEqualTo(1);
    }

    // ---------------------------------------------------------------- zip (npz)

    @Test
    void anNpzIsReadFromItsDirectoryAtTheEnd() throws IOException {
        byte[] file = RemoteFiles.npz(3 << 20);
        server.file("/arrays.npz", file);
        Runs.Run r = amn("--debug", "parse", "--json", server.url("/arrays.npz"));
        assertThat(r.code()).as(r.err()).isZero();
        JsonNode remote = withoutInput(r.json());
        assertThat(remote).isEqualTo(localParse("arrays.npz", file));
        assertThat(remote.get("tensors")).hasSize(2);
        // the first probe (the first array's header inside it), the tail as a suffix range
        // (the directory), the second array's header: three requests, not the 3 MiB between
        assertThat(server.requests).extracting(RangeServer.Request::range)
                .containsExactly("bytes=0-" + (PROBE - 1), "bytes=-" + io.anamnesis.api.spi.RangeChannel.TAIL_BYTES,
                        server.requests.get(2).range());
        assertThat(server.requests.get(2).range()).matches("bytes=\\d+-\\d+");
        assertThat(fetched(r)).isLessThan(PROBE + io.anamnesis.api.spi.RangeChannel.TAIL_BYTES
                + io.anamnesis.api.spi.RangeChannel.MIN_FETCH + 1);
    }

    // ---------------------------------------------------------------- zip (PyTorch)

    /**
     * A torch.save zip of 50 tensors whose storages lie 64 KiB apart: the pickle in the first
     * probe, the directory in one suffix range, and no request per storage (they are placed
     * from the directory), so three requests however many tensors there are.
     */
    @Test
    void aPthIsReadFromItsDirectoryWithoutARequestPerStorage() throws IOException {
        byte[] file = RemoteFiles.pth(50, 64 << 10);
        assertThat(file.length).isGreaterThan(3_000_000);
        server.file("/model.pth", file);
        Runs.Run r = amn("--debug", "parse", "--json", server.url("/model.pth"));
        assertThat(r.code()).as(r.err()).isZero();
        JsonNode remote = withoutInput(r.json());
        assertThat(remote).isEqualTo(localParse("model.pth", file));
        assertThat(remote.get("tensors")).hasSize(50);
        assertThat(remote.get("tensors").get(49).get("shape").toString()).isEqualTo("[2,2]");
        assertThat(server.rangeRequests("/model.pth")).isLessThanOrEqualTo(3);
        assertThat(server.requests).extracting(RangeServer.Request::range)
                .contains("bytes=-" + io.anamnesis.api.spi.RangeChannel.TAIL_BYTES);
        Runs.Run inspect = amn("inspect", server.url("/model.pth"));
        assertThat(inspect.code()).as(inspect.err()).isZero();
        assertThat(inspect.out()).contains("weights_only");
    }

    @Test
    void aLegacyPthIsRefusedAsUnreadableByRanges() {
        // the legacy stream starts with the pickle protocol byte, not a zip magic
        byte[] legacy = new byte[4096];
        legacy[0] = (byte) 0x80;
        legacy[1] = 2;
        server.file("/old.pth", legacy);
        Runs.Run r = amn("inspect", server.url("/old.pth"));
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("legacy").contains("download it first");
    }

    /** The bytes the debug report says were fetched. */
    private static long fetched(Runs.Run r) {
        var m = java.util.regex.Pattern.compile("\\d+ requests \\(\\d+ redirects\\), (\\d+) bytes fetched").matcher(r.err());
        assertThat(m.find()).as(r.err()).isTrue();
        return Long.parseLong(m.group(1));
    }

    // ---------------------------------------------------------------- index of shards

    private void shards(String prefix) {
        server.file(prefix + "model-00001-of-00002.safetensors", RemoteFiles.safetensors(
                "{\"__metadata__\":{\"format\":\"pt\"},\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                        + "\"b.weight\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", new byte[12]));
        server.file(prefix + "model-00002-of-00002.safetensors", RemoteFiles.safetensors(
                "{\"c.weight\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,8]}}", new byte[8]));
    }

    private static byte[] index(String... tensorShardPairs) {
        StringBuilder s = new StringBuilder("{\"metadata\":{\"total_size\":28},\"weight_map\":{");
        for (int i = 0; i < tensorShardPairs.length; i += 2) {
            if (i > 0) s.append(',');
            s.append('"').append(tensorShardPairs[i]).append("\":\"").append(tensorShardPairs[i + 1]).append('"');
        }
        return s.append("}}").toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    @Test
    void anIndexUrlReadsEveryShardsHeader() throws IOException {
        shards("/repo/");
        server.file("/repo/model.safetensors.index.json", index(
                "a.weight", "model-00001-of-00002.safetensors", "b.weight", "model-00001-of-00002.safetensors",
                "c.weight", "model-00002-of-00002.safetensors"));
        JsonNode parse = remoteParse(server.url("/repo/model.safetensors.index.json"));
        assertThat(parse.get("tensors")).extracting(t -> t.get("name").asText()).containsExactly("a.weight", "b.weight", "c.weight");
        assertThat(parse.get("tensors").get(2).get("dtype").asText()).isEqualTo("BF16");
        assertThat(parse.get("metadata").get("format").asText()).isEqualTo("pt");
        Runs.Run inspect = amn("inspect", server.url("/repo/model.safetensors.index.json"));
        assertThat(inspect.code()).as(inspect.err()).isZero();
        // the shard listing of a local model folder: one line per file, its tensors and size
        assertThat(inspect.out()).containsPattern("model-00001-of-00002\\.safetensors +2 tensors +12 B")
                .containsPattern("model-00002-of-00002\\.safetensors +1 tensor +8 B");
        assertThat(server.rangeRequests("/repo/model-00001-of-00002.safetensors")).isEqualTo(2); // one per run
        assertThat(server.rangeRequests("/repo/model-00002-of-00002.safetensors")).isEqualTo(2);
    }

    @Test
    void anIndexThatDisagreesWithItsShardsIsRefused() {
        shards("/repo/");
        server.file("/repo/twice.safetensors.index.json", index(
                "a.weight", "model-00001-of-00002.safetensors", "c.weight", "model-00001-of-00002.safetensors"));
        Runs.Run lacking = amn("parse", server.url("/repo/twice.safetensors.index.json"));
        assertThat(lacking.code()).isEqualTo(3);
        assertThat(lacking.err()).contains("c.weight").contains("lacks it");

        server.file("/repo/missing.safetensors.index.json", index("a.weight", "model-00009-of-00009.safetensors"));
        Runs.Run missing = amn("parse", server.url("/repo/missing.safetensors.index.json"));
        assertThat(missing.code()).isEqualTo(7);
        assertThat(missing.err()).contains("model-00009-of-00009.safetensors").contains("not found (HTTP 404)");

        server.file("/repo/escape.safetensors.index.json", index("a.weight", "../other/model.safetensors"));
        Runs.Run escape = amn("parse", server.url("/repo/escape.safetensors.index.json"));
        assertThat(escape.code()).isEqualTo(3);
        assertThat(escape.err()).contains("not a file beside the index");
        assertThat(server.requests).noneMatch(r -> r.path().startsWith("/other/"));
    }

    /** An FP8 weight of 128 x 128 in one shard, its block scales (2 x 2: blocks of 64) in the other. */
    private void fp8Shards(String prefix) {
        server.file(prefix + "model-00001-of-00002.safetensors", RemoteFiles.safetensors(
                "{\"l.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[128,128],\"data_offsets\":[0,16384]}}", new byte[16384]));
        server.file(prefix + "model-00002-of-00002.safetensors", RemoteFiles.safetensors(
                "{\"l.weight_scale_inv\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", new byte[16]));
        server.file(prefix + "model.safetensors.index.json", index(
                "l.weight", "model-00001-of-00002.safetensors", "l.weight_scale_inv", "model-00002-of-00002.safetensors"));
    }

    private static final String FP8_CONFIG = """
            {"architectures": ["Qwen3ForCausalLM"], "quantization_config": {"quant_method": "fp8",
             "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [64, 64]}}
            """;

    /**
     * A model says how it is quantized in its config.json: read beside a remote index, it
     * makes inspect of the URL give what inspect of the same folder on disk gives (here the
     * block size, 64 x 64, that the scales' shape needs), where without it the default block
     * size does not fit the scales. GPTQ's and AWQ's older config files are asked for only
     * when config.json has no quantization_config.
     */
    @Test
    void anIndexUrlReadsTheModelsConfigJson() throws IOException {
        fp8Shards("/bare/");
        Runs.Run bare = amn("inspect", "--json", server.url("/bare/model.safetensors.index.json"));
        assertThat(bare.code()).isEqualTo(3);
        assertThat(bare.err()).contains("l.weight_scale_inv").contains("the default block size");
        assertThat(server.requests).extracting(RangeServer.Request::path)
                .contains("/bare/config.json", "/bare/quantize_config.json", "/bare/quant_config.json");

        fp8Shards("/fp8/");
        server.file("/fp8/config.json", FP8_CONFIG.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        Runs.Run remote = amn("inspect", "--json", server.url("/fp8/model.safetensors.index.json"));
        assertThat(remote.code()).as(remote.err()).isZero();
        assertThat(remote.json().get("scheme").asText()).isEqualTo("FP8 E4M3, 64x64 block scales (F32)");
        assertThat(remote.json().get("shards")).extracting(n -> n.get("file").asText())
                .containsExactly("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors");
        assertThat(server.requests).extracting(RangeServer.Request::path)
                .doesNotContain("/fp8/quantize_config.json", "/fp8/quant_config.json");

        Path folder = Files.createDirectories(dir.resolve("fp8"));
        for (String f : List.of("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                "model.safetensors.index.json", "config.json")) {
            Files.write(folder.resolve(f), server.bytes("/fp8/" + f));
        }
        Runs.Run local = amn("inspect", "--json", folder.toString());
        assertThat(local.code()).as(local.err()).isZero();
        assertThat(inspectWithoutPlace(remote.json())).isEqualTo(inspectWithoutPlace(local.json()));
    }

    /** An inspect report without what says where the model is (input, folder): the rest must agree. */
    private static JsonNode inspectWithoutPlace(JsonNode n) {
        ObjectNode o = ((ObjectNode) n).deepCopy();
        o.remove("input");
        o.remove("properties");
        return o;
    }

    // ---------------------------------------------------------------- hf://, tokens, redirects

    @Test
    void hfReferencesResolveAgainstHfEndpointAndSendTheToken() throws IOException {
        byte[] file = RemoteFiles.safetensorsWithHeaderLength(300);
        server.file("/org/repo/resolve/v1.0/sub/m.safetensors", file).token("/org/repo/resolve/v1.0/sub/m.safetensors", "s3cret");
        Map<String, String> env = Map.of("HF_ENDPOINT", server.base() + "/", "HF_TOKEN", "s3cret");
        Runs.Run r = amn(env, "--debug", "parse", "--json", "hf://org/repo@v1.0/sub/m.safetensors");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(withoutInput(r.json())).isEqualTo(localParse("m.safetensors", file));
        assertThat(server.requests).allMatch(q -> "Bearer s3cret".equals(q.authorization()));
        assertThat(r.out() + r.err()).doesNotContain("s3cret");
    }

    @Test
    void withoutTheTokenTheMessageSaysOneMayBeNeeded() {
        server.file("/org/gated/resolve/main/m.safetensors", RemoteFiles.safetensorsWithHeaderLength(300))
                .token("/org/gated/resolve/main/m.safetensors", "right");
        Map<String, String> endpoint = Map.of("HF_ENDPOINT", server.base());
        Runs.Run none = amn(endpoint, "inspect", "hf://org/gated/m.safetensors");
        assertThat(none.code()).isEqualTo(7);
        assertThat(none.err()).contains("HTTP 401").contains("a token may be needed").contains("HF_TOKEN")
                .contains(server.url("/org/gated/resolve/main/m.safetensors"));

        Map<String, String> wrong = new HashMap<>(endpoint);
        wrong.put("HF_TOKEN", "wrong-token-value");
        Runs.Run refused = amn(wrong, "--debug", "inspect", "hf://org/gated/m.safetensors");
        assertThat(refused.code()).isEqualTo(7);
        assertThat(refused.err()).contains("HTTP 403").contains("HF_TOKEN was refused").doesNotContain("wrong-token-value");
    }

    /** huggingface_hub's hf_hub_url: {endpoint}/{repo}/resolve/{quoted revision}/{quoted path}. */
    @Test
    void hfReferencesResolveAsTheHubSpellsThem() {
        assertThat(RemoteRef.parse("hf://Qwen/Qwen3-0.6B/model.safetensors", Map.of()).uri().toString())
                .isEqualTo("https://huggingface.co/Qwen/Qwen3-0.6B/resolve/main/model.safetensors");
        RemoteRef pinned = RemoteRef.parse("hf://org/repo@v1.0/sub dir/m.gguf", Map.of("HF_ENDPOINT", "https://mirror.example/"));
        assertThat(pinned.uri().toString()).isEqualTo("https://mirror.example/org/repo/resolve/v1.0/sub%20dir/m.gguf");
        assertThat(pinned.fileName()).isEqualTo("m.gguf");
        assertThat(RemoteRef.parse("hf://datasets/org/set/data.npz", Map.of()).uri().toString())
                .isEqualTo("https://huggingface.co/datasets/org/set/resolve/main/data.npz");
        // the token goes to the hub's host alone
        assertThat(RemoteRef.parse("hf://org/repo/m.gguf", Map.of("HF_TOKEN", "t")).token()).contains("t");
        assertThat(RemoteRef.parse("https://huggingface.co/org/repo/resolve/main/m.gguf", Map.of("HF_TOKEN", "t")).token()).contains("t");
        assertThat(RemoteRef.parse("https://cdn.example/m.gguf", Map.of("HF_TOKEN", "t")).token()).isEmpty();
        assertThat(RemoteRef.parse("hf://org/repo/m.gguf", Map.of("HF_TOKEN", "t")).toString()).doesNotContain("t@").isEqualTo("hf://org/repo/m.gguf");
    }

    @ParameterizedTest
    @ValueSource(strings = {"hf://org/m.safetensors", "hf://org/repo/", "hf://org/repo/../m.gguf", "hf://org/@/m.gguf",
            "http://example.com/m.safetensors", "https://host/dir/"})
    void malformedOrInsecureReferencesAreUsageErrors(String reference) {
        Runs.Run r = amn("inspect", reference);
        assertThat(r.code()).as(r.err()).isEqualTo(2);
        assertThat(r.err()).contains(reference);
    }

    @Test
    void theTokenIsSentToTheHubOnly() {
        server.file("/elsewhere/m.safetensors", RemoteFiles.safetensorsWithHeaderLength(300));
        // HF_ENDPOINT names another origin: a plain URL on this one gets no token
        Map<String, String> env = Map.of("HF_ENDPOINT", server.otherOrigin(), "HF_TOKEN", "s3cret");
        assertThat(amn(env, "parse", server.url("/elsewhere/m.safetensors")).code()).isZero();
        assertThat(server.requests).isNotEmpty().allMatch(q -> q.authorization() == null);
    }

    @Test
    void aRedirectToAnotherHostIsFollowedWithoutTheToken() throws IOException {
        byte[] file = RemoteFiles.safetensorsManyTensors(2_000); // a header past the first probe: two ranges
        String hub = "/org/repo/resolve/main/model.safetensors";
        server.token(hub, "s3cret").redirect(hub, server.otherOrigin() + "/cdn/blob?signature=abc")
                .file("/cdn/blob", file);
        Map<String, String> env = Map.of("HF_ENDPOINT", server.base(), "HF_TOKEN", "s3cret");
        Runs.Run r = amn(env, "--debug", "parse", "--json", "hf://org/repo/model.safetensors");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(withoutInput(r.json())).isEqualTo(localParse("model.safetensors", file));
        // the hub once, with the token; the CDN for both ranges, without it
        assertThat(server.requests).filteredOn(q -> q.path().equals(hub)).hasSize(1)
                .allMatch(q -> "Bearer s3cret".equals(q.authorization()));
        assertThat(server.requests).filteredOn(q -> q.path().equals("/cdn/blob")).hasSize(2)
                .allMatch(q -> q.authorization() == null);
        assertThat(r.err()).contains("3 requests (1 redirects)").doesNotContain("s3cret").doesNotContain("signature=abc");
    }

    // ---------------------------------------------------------------- servers that fail

    @Test
    void aServerThatIgnoresRangesIsRefusedBeforeItStreamsTheFile() throws InterruptedException {
        long size = 4L << 30;
        server.ignoreRanges("/whole.safetensors", size);
        Runs.Run r = amn("inspect", server.url("/whole.safetensors"));
        assertThat(r.code()).isEqualTo(7);
        assertThat(r.err()).contains("ignored the range request").contains(size + " bytes").contains("download it first");
        // the client hung up: the server's answer ends cut off, not sent whole
        assertThat(server.streamEnded.await(60, TimeUnit.SECONDS)).isTrue();
        assertThat(server.streamFinished).isFalse();
        assertThat(server.streamed.get()).isLessThan(size);
    }

    @Test
    void aSmallFileServedWholeIsTakenWhole() throws IOException {
        // a server without ranges answering the first probe with a file shorter than it: nothing more to read
        byte[] file = RemoteFiles.safetensorsWithHeaderLength(200);
        server.ignoreRanges("/small.safetensors", file.length);
        Runs.Run r = amn("parse", server.url("/small.safetensors"));
        // the stand-in server sends zeros: the file is taken whole, then refused for what it holds
        assertThat(r.code()).isIn(3, 6);
        assertThat(r.err()).doesNotContain("ignored the range request");
    }

    @Test
    void notFoundNamesTheUrl() {
        Runs.Run r = amn("inspect", server.url("/nothing/here.gguf"));
        assertThat(r.code()).isEqualTo(7);
        assertThat(r.err()).contains(server.url("/nothing/here.gguf")).contains("not found (HTTP 404)");
    }

    @Test
    void anAnswerShorterThanAskedIsATypedError() {
        server.file("/short.gguf", RemoteFiles.gguf(10, 10)).shortBy("/short.gguf", 100);
        Runs.Run r = amn("parse", server.url("/short.gguf"));
        assertThat(r.code()).isEqualTo(7);
        assertThat(r.err()).contains("shorter than asked");
    }

    @Test
    void aServerThatNeverAnswersTimesOut() {
        server.stall("/slow.safetensors");
        Runs.Run r = amn(Map.of("AMN_HTTP_TIMEOUT", "0.5"), "inspect", server.url("/slow.safetensors"));
        assertThat(r.code()).isEqualTo(7);
        assertThat(r.err()).contains("timed out");
    }

    @Test
    void aBadTimeoutIsAUsageError() {
        Runs.Run r = amn(Map.of("AMN_HTTP_TIMEOUT", "soon"), "inspect", server.url("/x.safetensors"));
        assertThat(r.code()).isEqualTo(2);
        assertThat(server.requests).isEmpty();
    }

    // ---------------------------------------------------------------- headers only

    @ParameterizedTest
    @ValueSource(strings = {"remember", "convert", "forget"})
    void commandsThatReadTensorDataRefuseAUrlUpFront(String command) {
        server.file("/m.safetensors", RemoteFiles.safetensorsWithHeaderLength(300));
        String[] args = switch (command) {
            case "convert" -> new String[]{command, server.url("/m.safetensors"), "--to", "gguf"};
            case "forget" -> new String[]{command, server.url("/m.safetensors"), "--to", "q8_0"};
            default -> new String[]{command, server.url("/m.safetensors")};
        };
        Runs.Run r = amn(args);
        assertThat(r.code()).as(r.err()).isEqualTo(2);
        assertThat(r.err()).contains("download the file first");
        assertThat(server.requests).isEmpty();
    }

    @Test
    void aRemoteArchiveHasNoTensorData() throws IOException {
        server.file("/m.safetensors", RemoteFiles.safetensorsWithHeaderLength(300))
                .file("/m.gguf", RemoteFiles.gguf(3, 3))
                .file("/m.npz", RemoteFiles.npz(10))
                .file("/m.pth", RemoteFiles.pth(2, 10));
        Amn.Context ctx = new Amn.Context(() -> AMN, new java.io.PrintWriter(java.io.Writer.nullWriter()),
                new java.io.PrintWriter(java.io.Writer.nullWriter()), Map.of(), dir, false);
        for (String path : List.of("/m.safetensors", "/m.gguf", "/m.npz", "/m.pth")) {
            try (TensorArchive a = InputRef.open(server.url(path), ctx); Arena arena = Arena.ofConfined()) {
                int asked = server.requests.size();
                for (TensorEntry e : a.tensors()) {
                    assertThat(a.path()).isEmpty();
                    assertThatThrownBy(() -> a.data(e, arena)).as(path).isInstanceOf(TensorIOException.class)
                            .hasMessageContaining("headers alone").hasMessageContaining("download");
                }
                assertThat(server.requests).as("data() asks the server for nothing").hasSize(asked);
            }
        }
    }
}
