package io.anamnesis.corpus;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code amn convert --to gguf --no-vocab} against llama.cpp's own {@code convert_hf_to_gguf.py}
 * on tiny random folders of every family beyond plain llama (qwen2, qwen3, qwen3moe, mixtral,
 * gemma, gemma2, gemma3 (and a multimodal one's text model), phi3 with and without longrope, granite, smollm3, olmo2 (and olmo3), qwen2moe,
 * gpt-oss (dense experts, and MXFP4 ones as a published checkpoint stores them), mistral3 (Mistral Small 3.x's text model), arcee, seed_oss, glm4, lfm2, command-r, cohere2, exaone4, qwen2vl,
 * llama with llama3/yarn/linear rope scaling),
 * stored F32, BF16 or F16, for each output type the converter has (f32, f16, bf16, q8_0, and
 * auto on some): every key in order with its type and value, every tensor in order with its
 * name, ggml type, shape and bytes, and then the whole file byte for byte. The expected file
 * is the converter's, run by {@code bench/scripts/converter_reference.py}, which stubs only
 * the vocabulary step (it writes {@code tokenizer.ggml.model = none}, as {@code --no-vocab}
 * does) and transformers (config.json read as it is: the converter's own fallback). What
 * differed (signalling NaNs to and from F16) and what is not compared is in
 * {@code docs/hf-to-gguf.md}, "Byte for byte against the converter".
 *
 * <p>Needs {@code AMN_CONVERTER_DIR}, a folder holding the converter and its {@code gguf-py/}
 * (llama.cpp's {@code convert_hf_to_gguf.py} and {@code gguf-py} at the commit the oracles
 * name), and a Python with numpy, PyYAML and torch ({@code AMN_CONVERTER_PYTHON}, else
 * {@code python3}, else the system {@code /usr/bin/python3}); skipped, saying which, without them.
 */
class ConverterParityTest {
    static final String DIR_ENV = "AMN_CONVERTER_DIR", PYTHON_ENV = "AMN_CONVERTER_PYTHON";
    static final Path SCRIPT = Path.of("..", "bench", "scripts", "converter_reference.py").toAbsolutePath().normalize();
    static final List<String> ALL = List.of("f32", "f16", "bf16", "q8_0");
    private static Path tmp;

    /**
     * A tiny model folder: its name (general.name comes from it), config.json, tensors, other
     * files, the output types compared, and the number of safetensors files (more than one:
     * tensor i of the name order in shard {@code i % shards + 1}, with an index).
     */
    record Folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors, Map<String, String> files,
                  List<String> outtypes, int shards) {
        Folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors, Map<String, String> files,
               List<String> outtypes) {
            this(name, config, tensors, files, outtypes, 1);
        }

        Folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors, List<String> outtypes) {
            this(name, config, tensors, Map.of(), outtypes, 1);
        }

        void write(Path dir) throws IOException {
            Files.writeString(dir.resolve("config.json"), config);
            for (var e : files.entrySet()) {
                Files.createDirectories(dir.resolve(e.getKey()).getParent());
                Files.writeString(dir.resolve(e.getKey()), e.getValue());
            }
            if (shards == 1) {
                HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), tensors);
                return;
            }
            List<Map<String, ReferenceSafetensors.Tensor>> parts = new ArrayList<>();
            for (int i = 0; i < shards; i++) parts.add(new LinkedHashMap<>());
            StringBuilder map = new StringBuilder();
            long total = 0;
            int i = 0;
            for (var e : tensors.entrySet()) {
                int shard = i++ % shards;
                parts.get(shard).put(e.getKey(), e.getValue());
                total += e.getValue().bytes().length;
                map.append(map.isEmpty() ? "" : ", ").append('"').append(e.getKey()).append("\": \"").append(shardName(shard)).append('"');
            }
            for (int k = 0; k < shards; k++) HfToGgufTest.writeSafetensors(dir.resolve(shardName(k)), parts.get(k));
            Files.writeString(dir.resolve("model.safetensors.index.json"), "{\"metadata\": {\"total_size\": " + total
                    + "}, \"weight_map\": {" + map + "}}");
        }

        private String shardName(int k) {
            return String.format("model-%05d-of-%05d.safetensors", k + 1, shards);
        }
    }

    private record Job(Folder folder, String outtype, Path dir, Path expected) {
    }

    @AfterAll
    static void cleanUp() throws IOException {
        if (tmp != null) HfToGgufCases.delete(tmp);
    }

    @TestFactory
    Stream<DynamicTest> amnWritesTheConvertersFile() throws Exception {
        Optional<String> missing = converterMissing();
        Optional<String> python = missing.isPresent() ? Optional.empty() : python();
        if (missing.isEmpty() && python.isEmpty()) {
            missing = Optional.of("no Python with numpy, yaml and torch (python3, /usr/bin/python3; or set " + PYTHON_ENV + ")");
        } else if (missing.isEmpty() && System.getenv(PYTHON_ENV) != null) {
            missing = probe(python.get());
        }
        if (missing.isPresent()) {
            String why = "converter parity skipped: " + missing.get();
            return Stream.of(DynamicTest.dynamicTest("convert_hf_to_gguf.py", () -> Assumptions.abort(why)));
        }
        tmp = Files.createTempDirectory("amn-converter-parity-");
        List<Job> jobs = new ArrayList<>();
        List<String> cmd = new ArrayList<>(List.of(python.orElseThrow(), SCRIPT.toString(), "convert",
                Path.of(System.getenv(DIR_ENV)).toAbsolutePath().toString()));
        for (Folder f : folders()) {
            Path dir = Files.createDirectories(tmp.resolve("in").resolve(f.name()));
            f.write(dir);
            for (String outtype : f.outtypes()) {
                Job j = new Job(f, outtype, dir, tmp.resolve("converter").resolve(f.name() + "-" + outtype + ".gguf"));
                jobs.add(j);
                cmd.addAll(List.of(dir.toString(), j.expected().toString(), outtype));
            }
        }
        Files.createDirectories(tmp.resolve("converter"));
        Files.createDirectories(tmp.resolve("amn"));
        String log = run(cmd);
        DynamicTest comparison = DynamicTest.dynamicTest("the comparison sees two output types apart", () -> {
            List<String> d = differences(ReferenceGguf.read(jobs.get(0).expected()), ReferenceGguf.read(jobs.get(1).expected()));
            assertThat(d).as(jobs.get(0).outtype() + " against " + jobs.get(1).outtype())
                    .anyMatch(s -> s.startsWith("general.file_type: the converter's (type 4) 0, amn's (type 4) 1"))
                    .anyMatch(s -> s.startsWith("token_embd.weight: the converter's f32, amn's f16"));
        });
        return Stream.concat(Stream.of(comparison),
                jobs.stream().map(j -> DynamicTest.dynamicTest(j.folder().name() + " " + j.outtype(), () -> compare(j, log))));
    }

    private static void compare(Job j, String log) throws IOException {
        assertThat(j.expected()).as("the converter wrote " + j.expected().getFileName() + ": " + log).isRegularFile();
        Path actual = tmp.resolve("amn").resolve(j.expected().getFileName());
        CorpusCliTest.Run r = DecoderReference.convert(j.dir(), j.outtype(), actual, false);
        assertThat(r.code()).as(j.folder().name() + ": " + r.err()).isZero();
        ReferenceGguf got = ReferenceGguf.read(actual);
        List<String> added = ADDED_KEYS.getOrDefault(got.kv.get("general.architecture").asString(), List.of());
        for (String k : added) {
            // the one deliberate difference: a key llama.cpp needs that the converter does not write; all else is compared
            assertThat(got.kv).as(j.folder().name() + " " + j.outtype()).containsKey(k);
            got.kv.remove(k);
        }
        List<String> differences = differences(ReferenceGguf.read(j.expected()), got);
        if (!added.isEmpty()) {
            assertThat(differences).as(j.folder().name() + " " + j.outtype() + ": amn's file less " + added + " against the "
                    + "converter's").isEmpty();
            return;
        }
        assertThat(differences).as(j.folder().name() + " " + j.outtype() + ": amn's file against the converter's").isEmpty();
        assertThat(Files.readAllBytes(actual)).as(j.folder().name() + " " + j.outtype() + ": the whole file byte for byte")
                .isEqualTo(Files.readAllBytes(j.expected()));
    }

    /**
     * Keys amn writes over the converter's, by architecture: exaone's RMS epsilon, which the converter at the commit
     * followed no longer writes and without which llama.cpp's exaone does not load. Such a file, these keys taken out,
     * has the converter's keys, values, tensors and tensor bytes (its whole-file bytes differ by the keys' length).
     */
    private static final Map<String, List<String>> ADDED_KEYS = Map.of("exaone", List.of("exaone.attention.layer_norm_rms_epsilon"));

    /** Every difference between two files: key order, a key's type or value, tensor order, a tensor's shape, type or bytes. */
    static List<String> differences(ReferenceGguf want, ReferenceGguf got) {
        List<String> out = new ArrayList<>();
        if (!List.copyOf(want.kv.keySet()).equals(List.copyOf(got.kv.keySet()))) {
            out.add("keys: the converter's " + want.kv.keySet() + ", amn's " + got.kv.keySet());
        }
        for (var e : want.kv.entrySet()) {
            ReferenceGguf.Kv g = got.kv.get(e.getKey());
            ReferenceGguf.Kv w = e.getValue();
            if (g == null) out.add(e.getKey() + ": missing (the converter's " + show(w) + ")");
            else if (g.type() != w.type() || !Arrays.equals(g.value(), w.value())) {
                out.add(e.getKey() + ": the converter's " + show(w) + ", amn's " + show(g));
            }
        }
        for (String k : got.kv.keySet()) {
            if (!want.kv.containsKey(k)) out.add(k + ": not in the converter's file (amn's " + show(got.kv.get(k)) + ")");
        }
        List<String> wantNames = want.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        List<String> gotNames = got.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        if (!wantNames.equals(gotNames)) out.add("tensor order: the converter's " + wantNames + ", amn's " + gotNames);
        for (ReferenceGguf.Tensor w : want.tensors) {
            Optional<ReferenceGguf.Tensor> g = got.tensors.stream().filter(t -> t.name().equals(w.name())).findFirst();
            if (g.isEmpty()) {
                out.add(w.name() + ": missing");
            } else if (g.get().type() != w.type()) {
                out.add(w.name() + ": the converter's " + ReferenceGguf.NAMES.get(w.type()) + ", amn's "
                        + ReferenceGguf.NAMES.get(g.get().type()));
            } else if (!Arrays.equals(g.get().ne(), w.ne())) {
                out.add(w.name() + ": the converter's shape " + Arrays.toString(w.ne()) + ", amn's " + Arrays.toString(g.get().ne()));
            } else if (!Arrays.equals(g.get().bytes(), w.bytes())) {
                byte[] a = w.bytes(), b = g.get().bytes();
                int n = 0, first = -1;
                for (int i = 0; i < a.length; i++) {
                    if (a[i] != b[i]) {
                        n++;
                        if (first < 0) first = i;
                    }
                }
                out.add(w.name() + " (" + ReferenceGguf.NAMES.get(w.type()) + "): " + n + " of " + a.length
                        + " bytes differ, the first at " + first);
            }
        }
        return out;
    }

    /** A key's value for a message: numbers and strings as such, arrays and the rest as hex. */
    static String show(ReferenceGguf.Kv kv) {
        ByteBuffer b = ByteBuffer.wrap(kv.value()).order(ByteOrder.LITTLE_ENDIAN);
        return switch (kv.type()) {
            case 0, 1, 2, 3, 4, 5, 7, 10, 11 -> "(type " + kv.type() + ") " + kv.asLong();
            case 6 -> "(f32) " + b.getFloat();
            case 12 -> "(f64) " + b.getDouble();
            case 8 -> "(string) " + kv.asString();
            default -> "(type " + kv.type() + ") " + HexFormat.of().formatHex(kv.value());
        };
    }

    // ------------------------------------------------------------------------------ the folders

    static List<Folder> folders() {
        List<Folder> f = new ArrayList<>();
        List<String> withAuto = List.of("f32", "f16", "bf16", "q8_0", "auto");

        String qwen2 = QwenToGgufTest.config("qwen2", false), qwen3 = QwenToGgufTest.config("qwen3", true);
        f.add(new Folder("Qwen2-tiny", qwen2, QwenToGgufTest.tensors("qwen2", false, 1), ALL));
        f.add(new Folder("Qwen2-tiny-bf16", qwen2, as("BF16", QwenToGgufTest.tensors("qwen2", false, 2)), withAuto));
        f.add(new Folder("Qwen2-Embedding-tiny", qwen2, QwenToGgufTest.tensors("qwen2", false, 3), Map.of(
                "modules.json", "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"}, "
                        + "{\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}]",
                "1_Pooling/config.json", "{\"word_embedding_dimension\": 32, \"pooling_mode_cls_token\": false, "
                        + "\"pooling_mode_mean_tokens\": true, \"pooling_mode_max_tokens\": false, \"pooling_mode_lasttoken\": false}"),
                List.of("f16")));
        f.add(new Folder("Qwen2-linear-tiny", qwen2.replace("\"rope_scaling\": null",
                "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}"), QwenToGgufTest.tensors("qwen2", false, 4), List.of("f16")));
        f.add(new Folder("Qwen2-yarn-params-tiny", qwen2.replace("\"rope_theta\": 1000000.0, \"rope_scaling\": null",
                "\"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 512, "
                        + "\"rope_theta\": 1000000.0}"), QwenToGgufTest.tensors("qwen2", false, 5), List.of("f16")));
        f.add(new Folder("Qwen3-tiny", qwen3, QwenToGgufTest.tensors("qwen3", true, 6), Map.of("generation_config.json",
                "{\"bos_token_id\": 1, \"do_sample\": true, \"eos_token_id\": [2, 3], \"temperature\": 0.6, \"top_k\": 20, "
                        + "\"top_p\": 0.95, \"min_p\": 0.0}"), ALL));
        f.add(new Folder("Qwen3-tiny-bf16", qwen3, as("BF16", QwenToGgufTest.tensors("qwen3", true, 7)), withAuto));
        f.add(new Folder("Qwen3-yarn-tiny", qwen3.replace("\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"yarn\", "
                + "\"factor\": 4.0, \"original_max_position_embeddings\": 512, \"beta_fast\": 32.0, \"beta_slow\": 1.0, "
                + "\"extrapolation_factor\": 1.0, \"attention_factor\": " + (0.1 * Math.log(4) + 1) + "}"),
                QwenToGgufTest.tensors("qwen3", true, 8), List.of("f16", "q8_0")));

        // Qwen3-Embedding's layout: the base model's names without model. (embed_tokens, layers.N.*, norm), tied, last-token
        // pooling; and the same under the architecture name Qwen3Model
        f.add(new Folder("Qwen3-Embedding-tiny", qwen3, QwenToGgufTest.unprefixed(QwenToGgufTest.tensors("qwen3", true, 40)), Map.of(
                "modules.json", "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"}, "
                        + "{\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}]",
                "1_Pooling/config.json", "{\"word_embedding_dimension\": 32, \"pooling_mode_cls_token\": false, "
                        + "\"pooling_mode_mean_tokens\": false, \"pooling_mode_max_tokens\": false, \"pooling_mode_lasttoken\": true}"),
                List.of("f32", "f16", "q8_0")));
        f.add(new Folder("Qwen3Model-tiny-bf16", qwen3.replace("Qwen3ForCausalLM", "Qwen3Model"),
                as("BF16", QwenToGgufTest.unprefixed(QwenToGgufTest.tensors("qwen3", true, 41))), withAuto));
        f.add(new Folder("Qwen3-MoE-tiny", MoeToGgufTest.config(), MoeToGgufTest.tensors(9), ALL));
        f.add(new Folder("Qwen3-MoE-tiny-f16", MoeToGgufTest.config(), as("F16", MoeToGgufTest.tensors(10)), withAuto));
        // transformers 5's layout: each block's experts fused (gate_up_proj split by rows, down_proj as it is), block 0
        // without .weight on the fused names, block 1 with it
        f.add(new Folder("Qwen3-MoE-tiny-fused", MoeToGgufTest.config(), MoeToGgufTest.fused(MoeToGgufTest.tensors(16),
                MoeToGgufTest.EXPERTS, List.of(0)), ALL));
        f.add(new Folder("Qwen2-MoE-tiny-fused-bf16", Qwen2MoeToGgufTest.config(""), as("BF16", MoeToGgufTest.fused(
                Qwen2MoeToGgufTest.tensors(17), Qwen2MoeToGgufTest.EXPERTS, List.of(1))), withAuto));
        f.add(new Folder("Mixtral-tiny", MoeToGgufTest.mixtralConfig(), MoeToGgufTest.mixtralTensors(11), ALL));
        f.add(new Folder("Mixtral-tiny-bf16", MoeToGgufTest.mixtralConfig(), as("BF16", MoeToGgufTest.mixtralTensors(12)), withAuto));
        // experts of one block in three files: the stack comes where the converter meets the block's last expert
        f.add(new Folder("Qwen3-MoE-tiny-sharded", MoeToGgufTest.config(), MoeToGgufTest.tensors(30), Map.of(), List.of("f16", "q8_0"), 3));
        f.add(new Folder("Mixtral-tiny-sharded", MoeToGgufTest.mixtralConfig(), as("BF16", MoeToGgufTest.mixtralTensors(31)), Map.of(),
                List.of("bf16", "auto"), 2));

        for (String arch : List.of("gemma", "gemma2")) {
            String name = arch.equals("gemma") ? "gemma-tiny" : "gemma-2-tiny";
            f.add(new Folder(name, GemmaToGgufTest.config(arch), GemmaToGgufTest.tensors(arch, "F32", true, 13), ALL));
            f.add(new Folder(name + "-f16", GemmaToGgufTest.config(arch), GemmaToGgufTest.tensors(arch, "F16", false, 14), withAuto));
            f.add(new Folder(name + "-bf16", GemmaToGgufTest.config(arch), as("BF16", GemmaToGgufTest.tensors(arch, "F32", false, 15)),
                    withAuto));
        }

        // gemma3: the embeddings cut to tokenizer.json's vocabulary and added tokens (60 of 64 rows), local rope base,
        // four norms and q/k norms + 1; and a multimodal checkpoint's text model (text_config complete, a linear scaling)
        Map<String, String> tokenizer = Map.of("tokenizer.json", gemma3Tokenizer(56, 4));
        String gemma3 = json(Gemma3ToGgufTest.config());
        f.add(new Folder("gemma-3-1b-tiny", gemma3, DecoderReference.randomF32(Gemma3ToGgufTest.shapes(false), new Random(40)),
                tokenizer, ALL));
        f.add(new Folder("gemma-3-1b-tiny-bf16", gemma3, as("BF16", DecoderReference.randomF32(Gemma3ToGgufTest.shapes(true),
                new Random(41))), tokenizer, withAuto));
        f.add(new Folder("gemma-3-1b-tiny-f16", gemma3, as("F16", DecoderReference.randomF32(Gemma3ToGgufTest.shapes(false),
                new Random(42))), tokenizer, withAuto));
        f.add(new Folder("gemma-3-4b-it-tiny", gemma3Multimodal(), gemma3MultimodalTensors(43), tokenizer, List.of("f16", "q8_0")));

        int qkv = (Phi3ToGgufTest.HEADS + 2 * Phi3ToGgufTest.KV_HEADS) * Phi3ToGgufTest.HEAD, gateUp = 2 * Phi3ToGgufTest.FF;
        f.add(new Folder("Phi-3-mini-tiny", Phi3ToGgufTest.config(""), Phi3ToGgufTest.tensors(16, qkv, gateUp), ALL));
        f.add(new Folder("Phi-3-mini-tiny-bf16", Phi3ToGgufTest.config(""), as("BF16", Phi3ToGgufTest.tensors(17, qkv, gateUp)), withAuto));
        f.add(new Folder("Phi-4-mini-tiny", Phi3ToGgufTest.config("\"partial_rotary_factor\": 0.75, \"sliding_window\": 2047, "),
                Phi3ToGgufTest.tensors(18, qkv, gateUp), List.of("f16", "q8_0")));
        int pairs = Phi3ToGgufTest.HEAD / 2;
        f.add(new Folder("Phi-3.5-mini-longrope-tiny", Phi3ToGgufTest.config("").replace("\"rope_scaling\": null",
                        "\"rope_scaling\": {\"type\": \"longrope\", \"long_factor\": " + factors(19, pairs, 40) + ", \"short_factor\": "
                                + factors(20, pairs, 1.1) + "}").replace("\"max_position_embeddings\": 4096", "\"max_position_embeddings\": 131072"),
                Phi3ToGgufTest.tensors(21, qkv, gateUp), ALL));

        f.add(new Folder("Llama-tiny", Llama3RopeToGgufTest.config("null", ""), Llama3RopeToGgufTest.tensors(32), ALL));
        // q/k rows permuted from F16 storage, written F16 as stored (NaN payloads and all)
        f.add(new Folder("Llama-tiny-f16", Llama3RopeToGgufTest.config("null", ""), halfSpecials(as("F16", Llama3RopeToGgufTest.tensors(33))),
                List.of("f32", "f16", "bf16", "auto")));
        f.add(new Folder("Llama-3.1-tiny", Llama3RopeToGgufTest.config(Llama3RopeToGgufTest.LLAMA3, LLAMA3_OLD),
                Llama3RopeToGgufTest.tensors(22), ALL));
        f.add(new Folder("Llama-3.1-tiny-bf16", Llama3RopeToGgufTest.config(Llama3RopeToGgufTest.LLAMA3, LLAMA3_OLD),
                as("BF16", Llama3RopeToGgufTest.tensors(23)), List.of("f16", "auto")));
        f.add(new Folder("Llama-yarn-tiny", Llama3RopeToGgufTest.config(YarnToGgufTest.YARN, ""), Llama3RopeToGgufTest.tensors(24),
                List.of("f16")));
        f.add(new Folder("Llama-linear-tiny", Llama3RopeToGgufTest.config("{\"type\": \"linear\", \"factor\": 4.0}", ""),
                Llama3RopeToGgufTest.tensors(25), List.of("f16")));

        // granite: llama with config.json's head_dim popped and four multipliers (a zero one not written)
        f.add(new Folder("granite-tiny", GraniteToGgufTest.config(GraniteToGgufTest.MULTIPLIERS, "null"),
                Llama3RopeToGgufTest.tensors(34), ALL));
        f.add(new Folder("granite-tiny-bf16", GraniteToGgufTest.config(GraniteToGgufTest.MULTIPLIERS.replace(
                "\"residual_multiplier\": 0.22", "\"residual_multiplier\": 0.0"), "{\"type\": \"linear\", \"factor\": 2.0}"),
                as("BF16", Llama3RopeToGgufTest.tensors(35)), withAuto));

        // smollm3: llama under another name; its no-rope layout is llama.cpp's own (every fourth layer)
        f.add(new Folder("SmolLM3-tiny", SmolLm3ToGgufTest.config(SmolLm3ToGgufTest.NO_ROPE), Llama3RopeToGgufTest.tensors(36), ALL));
        f.add(new Folder("SmolLM3-3.1-tiny-bf16", SmolLm3ToGgufTest.config(LLAMA3_OLD).replace("\"rope_scaling\": null",
                "\"rope_scaling\": " + Llama3RopeToGgufTest.LLAMA3), as("BF16", Llama3RopeToGgufTest.tensors(37)), withAuto));

        // olmo2: norms after attention and MLP only, q/k norms over the whole projection, no permutation
        f.add(new Folder("OLMo-2-tiny", Olmo2ToGgufTest.config(""), Olmo2ToGgufTest.tensors(38, 64), ALL));
        f.add(new Folder("OLMo-2-tiny-bf16", Olmo2ToGgufTest.config(""), as("BF16", Olmo2ToGgufTest.tensors(39, 64)), withAuto));
        // olmo3 (the same converter class): the window and its layers as keys; yarn as Olmo 3's long-context configs declare it
        f.add(new Folder("OLMo-3-tiny", Olmo2ToGgufTest.olmo3("\"layer_types\": [\"sliding_attention\", \"full_attention\"], "),
                Olmo2ToGgufTest.tensors(81, 64), ALL));
        f.add(new Folder("OLMo-3-tiny-bf16", Olmo2ToGgufTest.olmo3("").replace("\"rope_scaling\": null", "\"rope_scaling\": "
                + "{\"rope_type\": \"yarn\", \"factor\": 8.0, \"original_max_position_embeddings\": 64, "
                + "\"attention_factor\": 1.2079441541679836, \"beta_fast\": 32.0, \"beta_slow\": 1.0}"),
                as("BF16", Olmo2ToGgufTest.tensors(82, 64)), withAuto));

        // qwen2moe: qwen2's attention, stacked experts, a shared expert with its gate
        f.add(new Folder("Qwen2-MoE-tiny", Qwen2MoeToGgufTest.config(""), Qwen2MoeToGgufTest.tensors(62), ALL));
        f.add(new Folder("Qwen2-MoE-tiny-bf16", Qwen2MoeToGgufTest.config(""), as("BF16", Qwen2MoeToGgufTest.tensors(63)), withAuto));

        // gpt-oss: packed experts split and transposed, or MXFP4 blocks repacked; sinks; yarn with truncate false
        f.addAll(GptOssToGgufTest.parityFolders(ALL, withAuto));

        // mistral3: Mistral Small 3.x's text model as llama, in transformers' old and new (4.52) tensor layouts
        f.addAll(Mistral3ToGgufTest.parityFolders(ALL, withAuto));

        // arcee: llama without a gate in its MLP, AFM's yarn
        f.addAll(ArceeToGgufTest.parityFolders(ALL, withAuto));

        // seed_oss: qwen2's block with its own head size, post_attention_norm before the MLP
        f.addAll(SeedOssToGgufTest.parityFolders(ALL, withAuto));

        // glm4: four norms a block, fused gate/up, the rope over half of each head
        f.addAll(Glm4ToGgufTest.parityFolders(ALL, withAuto));

        // lfm2: short convolutions beside attention, head_count_kv per layer, the adjusted feed-forward width
        f.addAll(Lfm2ToGgufTest.parityFolders(ALL, withAuto));

        // command-r: one norm a block, per-head q/k norms, tied, the context length from model_max_length
        f.addAll(CommandRToGgufTest.parityFolders(ALL, withAuto));
        // cohere2: three local layers to one global, zero biases left out
        f.addAll(Cohere2ToGgufTest.parityFolders(ALL, withAuto));
        // exaone4: post norms, q/k norms, a window pattern string, llama3 rope_freqs
        f.addAll(Exaone4ToGgufTest.parityFolders(ALL, withAuto));
        // qwen2vl: Qwen2-VL / Qwen2.5-VL's language model, the vision tower left out, M-RoPE sections
        f.addAll(Qwen2VlToGgufTest.parityFolders(ALL, withAuto));
        // qwen3vl and qwen3vlmoe: Qwen3-VL's language models (model.language_model.*), interleaved M-RoPE sections, the
        // DeepStack layer count, the MoE's packed experts split in halves and transposed
        f.addAll(Qwen3VlToGgufTest.parityFolders(ALL, withAuto));
        // granitemoe: granite's multipliers with JetMoE's fused experts split into halves of rows, and the shared MLP
        f.addAll(GraniteMoeToGgufTest.parityFolders(ALL, withAuto));
        // minimax-m2: whole-projection q/k norms, rotary_dim, sigmoid routing with the selection bias, stacked experts
        f.addAll(MiniMaxM2ToGgufTest.parityFolders(ALL, withAuto));
        // lfm2moe: LFM2's layers, a dense leading layer, sigmoid routing with the selection bias, stacked experts
        f.addAll(Lfm2MoeToGgufTest.parityFolders(ALL, withAuto));
        // starcoder2: LayerNorms and biases everywhere, c_fc/c_proj, tied and untied
        f.addAll(Starcoder2ToGgufTest.parityFolders(ALL, withAuto));
        // apertus: unpermuted llama with q/k norms, an up/down MLP, the xIELU parameters as arrays before the metadata
        f.addAll(ApertusToGgufTest.parityFolders(ALL, withAuto));
        // phi2: its own keys (4 x hidden, partial rope, no BOS), one LayerNorm a block, biases, lm_head's bias
        f.addAll(Phi2ToGgufTest.parityFolders(ALL, withAuto));
        // gptneox: the per-head fused q/k/v re-laid in blocks, parallel or sequential, no file type key
        f.addAll(GptNeoxToGgufTest.parityFolders(ALL, withAuto));
        // gpt2: the Conv1D weights transposed, learned positions kept F32, bare and transformer.* names, its own keys
        f.addAll(Gpt2ToGgufTest.parityFolders(ALL, withAuto));
        // starcoder: GPT-2's names with linear layers and multi-query attention, one key/value head as a key
        f.addAll(StarcoderToGgufTest.parityFolders(ALL, withAuto));
        // bloom: the per-head fused q/k/v re-laid in blocks, the embeddings' LayerNorm, the context length's fallback
        f.addAll(BloomToGgufTest.parityFolders(ALL, withAuto));
        // stablelm: llama's names with LayerNorms and biases, unpermuted, the partial rope, parallel or sequential
        f.addAll(StableLmToGgufTest.parityFolders(ALL, withAuto));
        // olmo: no norm tensors, llama's permuted q/k, TextModel's keys then the epsilon and the clamp
        f.addAll(OlmoToGgufTest.parityFolders(ALL, withAuto));
        // falcon: the grouped fused q/k/v re-laid, one or two norms a block, its own keys (2048, "jploski")
        f.addAll(FalconToGgufTest.parityFolders(ALL, withAuto));
        // exaone: EXAONE 3's transformer.* names, c_fc_0/c_fc_1, TextModel's keys from num_layers and layer_norm_epsilon,
        // llama3 rope_freqs; the RMS epsilon llama.cpp reads added (ADDED_KEYS)
        f.addAll(ExaoneToGgufTest.parityFolders(ALL, withAuto));
        // nemotron: LayerNorm1P's weights shifted by 1 with their biases, an up/down MLP, the partial rope, pad 0 / unk 1
        f.addAll(NemotronToGgufTest.parityFolders(ALL, withAuto));
        // minicpm: llama's tensors and permuted rows, TextModel's keys then the three scales
        f.addAll(MiniCpmToGgufTest.parityFolders(ALL, withAuto));
        // mpt: the fused Wqkv in blocks, tied, no biases, its keys from the nested attn_config (clamp, ALiBi, kv heads), no file type
        f.addAll(MptToGgufTest.parityFolders(ALL, withAuto));
        // bert: an encoder's names (and BertForMaskedLM's under bert., gamma/beta), the pooler and heads left out, position and
        // token type embeddings F32, TextModel's keys then causal false and the sentence-transformers pooling type
        f.addAll(BertToGgufTest.parityFolders(ALL, withAuto));
        // nomic-bert: the fused Wqkv kept, fc11/fc12/fc2 as up/gate/down, the trained context rewritten, rotary_emb_base
        f.addAll(NomicBertToGgufTest.parityFolders(ALL, withAuto));
        // xlm-roberta: bert's layout under roberta. or bare names, the position rows cut past the padding id
        f.addAll(XlmRobertaToGgufTest.parityFolders(ALL, withAuto));
        // distilbert: bert's layout from DistilBERT's names, no token types, the masked-LM head left out, the epsilon first
        f.addAll(DistilBertToGgufTest.parityFolders(ALL, withAuto));
        // gemma-embedding: gemma3's layout under the base model's names, the window as config.json gives it, the pooling type
        f.addAll(EmbeddingGemmaToGgufTest.parityFolders(ALL, withAuto));
        // orion: llama's names with LayerNorm biases, unpermuted, its own keys (the file type first, the context's fallbacks)
        f.addAll(OrionToGgufTest.parityFolders(ALL, withAuto));
        // internlm2: the grouped fused wqkv split into q, k, v and permuted, its own names, dynamic NTK left out
        f.addAll(InternLm2ToGgufTest.parityFolders(ALL, withAuto));
        // deepseek: the first DeepSeek MoE, llama's attention, a dense lead, stacked experts (down, gate, up), shared experts
        f.addAll(DeepseekToGgufTest.parityFolders(ALL, withAuto));
        // deepseek2: latent attention (kv_b split, one key/value head), a dense lead block, grouped sigmoid routing with
        // its selection bias, shared experts, the multi-token-prediction layer left out; V2-Lite's single query projection
        f.addAll(DeepSeek2ToGgufTest.parityFolders(ALL, withAuto));
        // glm4moe: GLM-4.5's biases, half-head rope, post_attention_norm, DeepSeek-V3's MoE, the MTP layer as nextn tensors
        f.addAll(Glm4MoeToGgufTest.parityFolders(ALL, withAuto));
        // llama4: Llama 4's text model, packed experts split in halves and transposed, widths renamed, dense layers between
        f.addAll(Llama4ToGgufTest.parityFolders(ALL, withAuto));
        // olmoe: whole-projection q/k norms, stacked experts, the converter's constant epsilon
        f.addAll(OlmoeToGgufTest.parityFolders(ALL, withAuto));
        // ernie4_5: llama's names unpermuted, head_dim apart from hidden / heads, tied
        f.addAll(Ernie45ToGgufTest.parityFolders(ALL, withAuto));
        // ernie4_5-moe: the experts stacked gate, up, down, the selection bias, the shared width's formula, MTP left out
        f.addAll(Ernie45MoeToGgufTest.parityFolders(ALL, withAuto));

        // the value conversions at their edges: NaNs, infinities, ties, overflow, subnormals
        f.add(new Folder("Qwen2-specials-tiny", qwen2, specials(QwenToGgufTest.tensors("qwen2", false, 26), SPECIALS),
                List.of("f32", "f16", "bf16")));
        f.add(new Folder("Qwen2-extremes-tiny", qwen2, specials(QwenToGgufTest.tensors("qwen2", false, 27), EXTREMES), ALL));
        f.add(new Folder("Qwen2-specials-bf16", qwen2, as("BF16", specials(QwenToGgufTest.tensors("qwen2", false, 28), SPECIALS)),
                List.of("f32", "f16", "bf16")));
        f.add(new Folder("Qwen2-specials-f16", qwen2, halfSpecials(as("F16", QwenToGgufTest.tensors("qwen2", false, 29))),
                List.of("f32", "f16", "bf16")));
        return f;
    }

    static String json(Object o) {
        try {
            return LlamaRunOracleTest.JSON.writeValueAsString(o);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A tokenizer.json with {@code vocab} tokens and {@code added} added tokens: all Gemma3Model reads of it (their count). */
    static String gemma3Tokenizer(int vocab, int added) {
        Map<String, Object> v = new LinkedHashMap<>();
        for (int i = 0; i < vocab; i++) v.put("t" + i, i);
        List<Object> a = new ArrayList<>();
        for (int i = 0; i < added; i++) {
            a.add(Map.of("id", vocab + i, "content", "<extra_" + i + ">", "special", true, "single_word", false, "lstrip", false,
                    "rstrip", false, "normalized", false));
        }
        return json(Map.of("model", Map.of("type", "BPE", "vocab", v, "merges", List.of()), "added_tokens", a));
    }

    /** A Gemma3ForConditionalGeneration config.json whose text_config names every key (so the converter's fallback needs no default). */
    static String gemma3Multimodal() {
        Map<String, Object> text = new LinkedHashMap<>(Gemma3ToGgufTest.config());
        text.remove("architectures");
        text.put("rope_scaling", Map.of("factor", 8.0, "rope_type", "linear"));
        text.put("sliding_window", 1024);
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("architectures", List.of("Gemma3ForConditionalGeneration"));
        c.put("model_type", "gemma3");
        c.put("text_config", text);
        c.put("vision_config", Map.of("hidden_size", 16, "model_type", "siglip_vision_model", "num_hidden_layers", 1));
        c.put("torch_dtype", "float32");
        return json(c);
    }

    /** Its tensors: the text model under {@code language_model.}, and a vision tower and projector the converter leaves out. */
    static Map<String, ReferenceSafetensors.Tensor> gemma3MultimodalTensors(long seed) {
        Map<String, long[]> shapes = new TreeMap<>();
        Gemma3ToGgufTest.shapes(false).forEach((k, v) -> shapes.put("language_model." + k, v));
        shapes.put("vision_tower.vision_model.embeddings.patch_embedding.weight", new long[]{16, 3, 4, 4});
        shapes.put("vision_tower.vision_model.post_layernorm.weight", new long[]{16});
        shapes.put("multi_modal_projector.mm_input_projection_weight", new long[]{16, Gemma3ToGgufTest.HIDDEN});
        shapes.put("multi_modal_projector.mm_soft_emb_norm.weight", new long[]{16});
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    /** Llama 3.1's original context at the top level too, where the converter reads it (see docs/hf-to-gguf.md, "llama3"). */
    static final String LLAMA3_OLD = "\"original_max_position_embeddings\": 64, ";

    /** Float bits a conversion may get wrong: NaNs (quiet, signalling, negative, with payloads), infinities, -0, F16 and BF16 ties and overflow, subnormals. */
    static final int[] SPECIALS = {0x7fc00000, 0xffc00001, 0x7f800001, 0x7fa00000, 0xff812345, 0x7f800000, 0xff800000, 0x80000000,
            0x477ff000, 0x477fefff, 0xc77ff000, 0x33000000, 0x33000001, 0x33c00000, 0xb3400000, 0x3f808000, 0x3f818000, 0x3f808001,
            0x7f7fffff, 0xff7f8000, 0x7f7f7fff, 0x00000001, 0x807fffff, 0x38800000, 0x387fc000, 0x387fe000, 0x00008000, 0x00018000};
    /** Finite values only (a Q8_0 block holding a NaN or an infinity is undefined): huge, tiny, subnormal, F16 overflow of the scale. */
    static final int[] EXTREMES = {0x7f7fffff, 0x80000000, 0x477ff000, 0x33000000, 0x33c00000, 0x3f808000, 0x00000001, 0x807fffff,
            0x38800000, 0x387fe000, 0x00018000, 0x3f818000};

    /** F16 bits a widening or a copy may get wrong: signalling and quiet NaNs with payloads, infinities, -0, subnormals, the largest finite. */
    static final short[] SPECIALS_16 = {0x7c01, 0x7d00, (short) 0xfc09, 0x7e00, (short) 0xfe01, 0x7c00, (short) 0xfc00, (short) 0x8000,
            0x0001, 0x03ff, (short) 0x8001, 0x7bff, 0x0400, 0x7fff};

    /** {@link #SPECIALS_16} written over the first values of every (F16) tensor. */
    static Map<String, ReferenceSafetensors.Tensor> halfSpecials(Map<String, ReferenceSafetensors.Tensor> in) {
        Map<String, ReferenceSafetensors.Tensor> out = new LinkedHashMap<>();
        for (var e : in.entrySet()) {
            ReferenceSafetensors.Tensor t = e.getValue();
            byte[] b = t.bytes().clone();
            ByteBuffer buf = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < SPECIALS_16.length && 2 * i < b.length; i++) buf.putShort(2 * i, SPECIALS_16[i]);
            out.put(e.getKey(), new ReferenceSafetensors.Tensor(t.dtype(), t.shape(), b));
        }
        return out;
    }

    /** {@code bits} written over the first values of every tensor (across the first rows of the small ones). */
    static Map<String, ReferenceSafetensors.Tensor> specials(Map<String, ReferenceSafetensors.Tensor> in, int[] bits) {
        Map<String, ReferenceSafetensors.Tensor> out = new LinkedHashMap<>();
        for (var e : in.entrySet()) {
            ReferenceSafetensors.Tensor t = e.getValue();
            byte[] b = t.bytes().clone();
            ByteBuffer buf = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < bits.length && 4 * i < b.length; i++) buf.putInt(4 * i, bits[i]);
            out.put(e.getKey(), new ReferenceSafetensors.Tensor(t.dtype(), t.shape(), b));
        }
        return out;
    }

    /**
     * F32 tensors stored as {@code dtype} (BF16 or F16), each value rounded to nearest even; a
     * NaN as BF16 keeps its top bits (signalling stays signalling; one payload bit set if it would become infinity).
     */
    static Map<String, ReferenceSafetensors.Tensor> as(String dtype, Map<String, ReferenceSafetensors.Tensor> in) {
        Map<String, ReferenceSafetensors.Tensor> out = new LinkedHashMap<>();
        for (var e : in.entrySet()) {
            ByteBuffer src = ByteBuffer.wrap(e.getValue().bytes()).order(ByteOrder.LITTLE_ENDIAN);
            ByteBuffer dst = ByteBuffer.allocate(e.getValue().bytes().length / 2).order(ByteOrder.LITTLE_ENDIAN);
            while (src.hasRemaining()) {
                int bits = src.getInt();
                if (dtype.equals("F16")) {
                    dst.putShort(Float.floatToFloat16(Float.intBitsToFloat(bits)));
                } else if ((bits & 0x7fffffff) > 0x7f800000) {
                    dst.putShort((short) ((bits >>> 16) | ((bits & 0x7f0000) == 0 ? 1 : 0)));
                } else {
                    dst.putShort((short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16));
                }
            }
            out.put(e.getKey(), new ReferenceSafetensors.Tensor(dtype, e.getValue().shape(), dst.array()));
        }
        return out;
    }

    /** {@code n} factors rising from about 1 to {@code top}, not float32 numbers (so the float32 rounding shows), as a JSON list. */
    static String factors(long seed, int n, double top) {
        Random r = new Random(seed);
        List<String> s = new ArrayList<>();
        for (int i = 0; i < n; i++) s.add(Double.toString(1 + (top - 1) * i / Math.max(1, n - 1) + r.nextDouble() * 1e-3));
        return "[" + String.join(", ", s) + "]";
    }

    // ------------------------------------------------------------------------------ what it needs

    /** The Python that runs the converter: {@code AMN_CONVERTER_PYTHON}, else the first of python3 and the system one that has torch. */
    static Optional<String> python() {
        String set = System.getenv(PYTHON_ENV);
        if (set != null && !set.isBlank()) return Optional.of(set);
        for (String p : List.of("python3", "/usr/bin/python3")) {
            if (probe(p).isEmpty()) return Optional.of(p);
        }
        return Optional.empty();
    }

    /** Why {@code python} cannot run the converter (numpy, PyYAML for gguf-py's metadata, torch), if it cannot. */
    static Optional<String> probe(String python) {
        try {
            Process p = new ProcessBuilder(python, "-c", "import numpy, yaml, torch").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return Optional.of(python + " did not import numpy, yaml, torch in 120 s");
            }
            if (p.exitValue() != 0) {
                String[] lines = out.split("\n");
                return Optional.of(python + " cannot import numpy, yaml and torch: " + lines[lines.length - 1]);
            }
            return Optional.empty();
        } catch (IOException e) {
            return Optional.of(python + " does not run: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.of(python + ": interrupted");
        }
    }

    /** Why the converter cannot run (its folder, the driver), if it cannot; the Python is looked for after. */
    static Optional<String> converterMissing() {
        String dir = System.getenv(DIR_ENV);
        if (dir == null || dir.isBlank()) {
            return Optional.of(DIR_ENV + " is not set (a folder with llama.cpp's convert_hf_to_gguf.py and gguf-py/, "
                    + "see docs/hf-to-gguf.md)");
        }
        Path d = Path.of(dir);
        if (!Files.isRegularFile(d.resolve("convert_hf_to_gguf.py"))) return Optional.of(DIR_ENV + " has no convert_hf_to_gguf.py");
        if (!Files.isRegularFile(d.resolve("gguf-py/gguf/__init__.py"))) return Optional.of(DIR_ENV + " has no gguf-py/gguf");
        if (!Files.isRegularFile(SCRIPT)) return Optional.of(SCRIPT + " not found");
        return Optional.empty();
    }

    /** Runs {@code cmd}; its standard error (the conversions that failed), or a failure when it takes over 900 s. */
    private static String run(List<String> cmd) throws IOException, InterruptedException {
        Path err = Files.createTempFile(tmp, "err-", ".txt");
        Process p = new ProcessBuilder(cmd).redirectError(err.toFile()).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        if (!p.waitFor(900, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("converter_reference.py did not finish in 900 s");
        }
        return "exit " + p.exitValue() + "; " + Files.readString(err);
    }
}
