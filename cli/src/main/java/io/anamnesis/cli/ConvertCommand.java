package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.ForgetOptions;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.ModelExport;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.spi.Quantizer;
import io.anamnesis.api.spi.WriteOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;

/** {@code amn convert}: the same recovery, written in any installed writer's format. */
@Command(name = "convert", sortOptions = false,
        header = "Recover quantized tensors and write the result in another format.",
        description = {"Reads the input, recovers every quantized group to --dtype, and writes it with the "
                + "writer of --to (see 'amn formats'). A format without an installed writer is refused up front "
                + "with the module to add.",
                "With --dtype naming a quantizer's target (--to gguf --dtype q4_k_m), the recovered tensors are "
                        + "quantized in the same pass: an FP8 or GPTQ safetensors file straight to a Q4_K_M GGUF.",
                "A Hugging Face model folder (config.json, model.safetensors or its shards, tokenizer.model, a "
                        + "byte-level BPE tokenizer.json, BERT's WordPiece one or sentencepiece.bpe.model) with "
                        + "--to gguf becomes the GGUF llama.cpp's convert_hf_to_gguf.py writes (architectures: "
                        + "LlamaForCausalLM and MistralForCausalLM, with Llama 3.1's rope scaling and YaRN; Qwen2ForCausalLM, "
                        + "Qwen3ForCausalLM (and Qwen3Model: Qwen3-Embedding), GemmaForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM and the text model of "
                        + "Gemma3ForConditionalGeneration (its vision tower left out), Phi3ForCausalLM, with the 128k models' longrope; "
                        + "GraniteForCausalLM, Starcoder2ForCausalLM, ApertusForCausalLM, PhiForCausalLM, GPTNeoXForCausalLM, GPT2LMHeadModel, GPTBigCodeForCausalLM, BloomForCausalLM, StableLmForCausalLM, StableLMEpochForCausalLM, OlmoForCausalLM, FalconForCausalLM, RWForCausalLM, SmolLM3ForCausalLM, Olmo2ForCausalLM, Olmo3ForCausalLM, the text model of "
                        + "Mistral3ForConditionalGeneration (Mistral Small 3.x, Ministral 3) and Ministral3ForCausalLM, ArceeForCausalLM, SeedOssForCausalLM, Glm4ForCausalLM, Lfm2ForCausalLM, CohereForCausalLM, Cohere2ForCausalLM, ExaoneForCausalLM, MiniCPMForCausalLM, NemotronForCausalLM, InternLM2ForCausalLM, OrionForCausalLM, MPTForCausalLM, Exaone4ForCausalLM, Ernie4_5ForCausalLM, the language model of "
                        + "Qwen2_5_VLForConditionalGeneration, Qwen2VLForConditionalGeneration and Qwen3VLForConditionalGeneration "
                        + "(their vision towers left out); "
                        + "mixtures of experts Qwen3MoeForCausalLM, Qwen2MoeForCausalLM, MixtralForCausalLM, OlmoeForCausalLM, "
                        + "Ernie4_5_MoeForCausalLM, GraniteMoeForCausalLM, GraniteMoeSharedForCausalLM, MiniMaxM2ForCausalLM (an FP8 "
                        + "checkpoint recovered on the way), Lfm2MoeForCausalLM, the language model of "
                        + "Qwen3VLMoeForConditionalGeneration and "
                        + "GptOssForCausalLM, "
                        + "whose MXFP4 experts stay MXFP4, and DeepseekForCausalLM, DeepseekV2ForCausalLM and DeepseekV3ForCausalLM (latent attention; "
                        + "an FP8 checkpoint recovered on the way, the multi-token-prediction layers left out), "
                        + "Glm4MoeForCausalLM (GLM-4.5/4.6), Glm4MoeLiteForCausalLM (GLM-4.7-Flash) and the text model of "
                        + "Llama4ForConditionalGeneration (Llama 4 Scout, Maverick; its vision model left out); the encoders "
                        + "BertModel and BertForMaskedLM (BERT and the sentence-transformers embedding models on it), DistilBertModel and "
                        + "DistilBertForMaskedLM, NomicBertModel "
                        + "(nomic-embed-text v1, v1.5), Gemma3TextModel (EmbeddingGemma), XLMRobertaModel (multilingual-e5, bge-m3) and "
                        + "XLMRobertaForSequenceClassification (bge-reranker)): "
                        + "GGUF names, rope "
                        + "row order, hyper-parameters, vocabulary; --dtype f32|f16|bf16|q8_0|auto as its --outtype (default auto), or a "
                        + "llama-quantize type (q4_k_m) applied to that file in the same pass. A quantized folder "
                        + "(FP8, GPTQ, AWQ, ...) is recovered on the way.",
                "Metadata goes along whole and typed: GGUF to safetensors keeps every GGUF key/value in the "
                        + "typed-json/1 encoding, safetensors to GGUF restores them; the summary says how many keys "
                        + "a conversion dropped (--debug names them)."},
        mixinStandardHelpOptions = true,
        footerHeading = "%n", footer = "Exit codes: see 'amn --help'.")
final class ConvertCommand implements Callable<Integer> {
    @ParentCommand
    Amn parent;

    @Parameters(index = "0", paramLabel = "<file>", description = "A tensor file; a model folder, its index JSON or any "
            + "one shard (the whole model); or ollama:<model>[:<tag>].")
    String input;

    @Option(names = "--to", paramLabel = "<format>", required = true,
            description = "Output format: safetensors, gguf, ... (a writer's name or extension).")
    String format;

    /** The recovery dtype (--dtype bf16|f16|f32); set directly by the fast path. */
    DType target = DType.BF16;

    /** --dtype naming a quantizer's target instead (q4_k_m, ggml:q8_0, ...): recover and forget in one pass. */
    String forgetTarget;

    /** --dtype as given (null when absent): a model folder's output type. */
    String dtypeName;

    @Option(names = "--dtype", paramLabel = "<dtype>",
            description = {"Dtype of recovered tensors: bf16, f16 or f32 (default: bf16).",
                    "Or a target of an installed quantizer that writes the --to format (e.g. q4_k_m for gguf, "
                            + "see 'amn formats'): recover and quantize in one pass, as 'amn forget' does.",
                    "For a model folder: the converter's output type f32, f16, bf16, q8_0 or auto (default), "
                            + "or a quantizer's target."})
    void dtype(String value) {
        dtypeName = value;
        try {
            target = DType.recoveryTarget(value);
            forgetTarget = null;
        } catch (IllegalArgumentException notRecovery) {
            forgetTarget = value;
        }
    }

    @Option(names = "--as-stored", description = "Recover nothing: copy every tensor as stored (quantized payloads and "
            + "their scales included), a pure container conversion.")
    boolean asStored;

    @Option(names = "--no-vocab", description = "For a model folder: write the GGUF without a vocabulary "
            + "(tokenizer.ggml.model = none), e.g. when the folder has no tokenizer the converter takes.")
    boolean noVocab;

    @Option(names = "--split-max-size", paramLabel = "<size>",
            description = "With --to gguf: write splits of at most this much tensor data each, in llama.cpp's "
                    + "gguf-split layout (<name>-00001-of-0000M.gguf, split.* keys, metadata in the first); "
                    + "sizes as gguf-split writes them (128M, 4G) or as --max-shard-size.")
    String splitMaxSize;

    @Mixin
    Recover.OutputOptions output;

    @Mixin
    GgufMetadataOptions gguf = new GgufMetadataOptions();

    @Override
    public Integer call() {
        InputRef.refuseRemote(input);
        var typed = gguf.values();
        if (isHfFolder(input) && exportsFolders()) {
            if (!typed.isEmpty() || splitMaxSize != null) {
                throw new UsageException("--gguf-kv, --gguf-metadata and --split-max-size are not yet taken with a "
                        + "Hugging Face model folder laid out for " + format);
            }
            if (output.maxShardSize != null) {
                throw new UsageException("--max-shard-size writes a model folder of safetensors shards; a Hugging Face "
                        + "model folder laid out for " + format + " is one file");
            }
            exportFolder();
            return Amn.OK;
        }
        if (noVocab) throw new UsageException("--no-vocab is for a Hugging Face model folder; " + input + " is not one");
        if (!typed.isEmpty() && !parent.context().amn().writer(format).format().equals("gguf")) {
            throw new UsageException("--gguf-kv and --gguf-metadata set GGUF key/values: they need --to gguf, not --to " + format);
        }
        if (forgetTarget != null) {
            if (!typed.isEmpty()) throw new UsageException("--gguf-kv and --gguf-metadata are not yet taken with a quantizing --dtype " + forgetTarget);
            forget();
            return Amn.OK;
        }
        if (asStored && dtypeName != null) {
            throw new UsageException("--as-stored copies tensors as stored; --dtype " + dtypeName + " would recover them: give one");
        }
        Recover.run(parent.context(), "convert", input, format, target, output, asStored, typed, splitMaxSize);
        return Amn.OK;
    }

    private void forget() {
        Anamnesis amn = parent.context().amn();
        Quantizer q = amn.forgetTargets().get(forgetTarget.toLowerCase(Locale.ROOT));
        if (q == null) {
            throw new UsageException("--dtype '" + forgetTarget + "' is neither a recovery dtype (bf16, f16, f32) nor a target "
                    + "of an installed quantizer" + (amn.forgetTargets().isEmpty() ? "" : " (targets: "
                    + String.join(", ", amn.forgetTargets().keySet()) + ")"));
        }
        if (asStored) throw new UsageException("--as-stored copies tensors as stored; it cannot quantize to " + forgetTarget);
        String writes = amn.writer(format).format();
        if (!q.format().equals(writes)) {
            throw new UsageException("--dtype " + forgetTarget + " makes " + q.format() + " files, not " + writes
                    + "; use --to " + q.format());
        }
        ForgetCommand.run(parent.context(), input, forgetTarget, ForgetOptions.defaults(), null, output, splitMaxSize);
    }

    /**
     * Whether the --to format lays a Hugging Face folder out anew (an exporter: the GGUF
     * llama.cpp's converter writes); otherwise a folder is converted as the one model it
     * holds, like a file (a folder of GGUF splits to one GGUF, a sharded folder to safetensors).
     */
    private boolean exportsFolders() {
        Anamnesis amn = parent.context().amn();
        return amn.findWriter(format).flatMap(w -> amn.exporter(w.format())).isPresent();
    }

    /** A folder with a {@code config.json}: a Hugging Face model folder, laid out by the exporter. */
    private static boolean isHfFolder(String input) {
        if (input.startsWith(InputRef.OLLAMA) || input.equals(InputRef.STDIN)) return false;
        try {
            Path p = Path.of(input);
            return Files.isDirectory(p) && Files.isRegularFile(p.resolve("config.json"));
        } catch (InvalidPathException e) {
            return false;
        }
    }

    /**
     * A model folder: laid out by the exporter of the --to format (the GGUF llama.cpp's
     * converter writes), recovered and, for a quantizer's target, quantized in the same pass.
     */
    private void exportFolder() {
        long start = System.nanoTime();
        Amn.Context ctx = parent.context();
        Anamnesis amn = ctx.amn();
        if (asStored) throw new UsageException("--as-stored copies tensors as stored; a model folder is laid out anew");
        FormatWriter writer = amn.writer(format);
        var exporter = amn.exporter(writer.format()).orElseThrow(() -> new UsageException("a model folder converts to "
                + (amn.exporters().isEmpty() ? "no format (no exporter is installed)"
                : String.join(", ", amn.exporters().stream().map(e -> e.format()).toList())) + ", not " + format));
        String dtype = dtypeName == null ? "auto" : dtypeName.toLowerCase(Locale.ROOT);
        if (!exporter.outputTypes().containsKey(dtype) && !amn.forgetTargets().containsKey(dtype)) {
            throw new UsageException("--dtype '" + dtypeName + "' is neither an output type of the " + writer.format()
                    + " exporter (" + String.join(", ", exporter.outputTypes().keySet()) + ") nor a target of an installed quantizer");
        }
        int threads = output.threadCount();
        InputRef in = InputRef.of(input, ctx.ollamaModels());
        // every file of a Hugging Face folder goes into the GGUF (weights, config, tokenizer): -o may replace none
        Path out = Outputs.choose(in, Optional.of(Outputs.ModelFiles.folder(in.file())), Optional.ofNullable(output.output),
                dtype.replace(':', '-'), writer, amn, "convert");
        ModelExport e;
        try (ProgressBar bar = ProgressBar.forTerminal(ctx, output.quiet)) {
            e = amn.export(in.file(), format, dtype, !noVocab, ForgetOptions.defaults(), LossMeter.off(), out,
                    new WriteOptions(threads, bar));
        }
        if (!output.quiet) {
            var where = Outputs.isStandardOutput(out) ? ctx.err() : ctx.out();
            String recovered = e.recovered() == 0 ? "" : ", " + e.recovered() + " recovered (" + String.join("; ", e.schemes()) + ")";
            String as = e.dtype().equals(e.outputType()) ? e.outputType() : e.dtype() + " (from the " + e.outputType() + " layout)";
            where.println("wrote " + (Outputs.isStandardOutput(out) ? "standard output" : out.toString()) + ": " + e.tensors()
                    + " tensors as " + as + recovered + ", " + Text.size(e.bytes()) + " in "
                    + Text.decimals((System.nanoTime() - start) / 1e9, 2) + " s");
            for (String note : e.notes()) where.println("  " + note);
            where.flush();
        }
    }
}
