package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.ForgetOptions;
import io.anamnesis.api.spi.Quantizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code amn convert}: the same recovery, written in any installed writer's format. */
@Command(name = "convert", sortOptions = false,
        header = "Recover quantized tensors and write the result in another format.",
        description = {"Reads the input, recovers every quantized group to --dtype, and writes it with the "
                + "writer of --to (see 'amn formats'). A format without an installed writer is refused up front "
                + "with the module to add.",
                "With --dtype naming a quantizer's target (--to gguf --dtype q4_k_m), the recovered tensors are "
                        + "quantized in the same pass: an FP8 or GPTQ safetensors file straight to a Q4_K_M GGUF.",
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

    @Option(names = "--dtype", paramLabel = "<dtype>", defaultValue = "bf16",
            description = {"Dtype of recovered tensors: bf16, f16 or f32 (default: ${DEFAULT-VALUE}).",
                    "Or a target of an installed quantizer that writes the --to format (e.g. q4_k_m for gguf, "
                            + "see 'amn formats'): recover and quantize in one pass, as 'amn forget' does."})
    void dtype(String value) {
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
        if (!typed.isEmpty() && !parent.context().amn().writer(format).format().equals("gguf")) {
            throw new UsageException("--gguf-kv and --gguf-metadata set GGUF key/values: they need --to gguf, not --to " + format);
        }
        if (forgetTarget != null) {
            if (!typed.isEmpty()) throw new UsageException("--gguf-kv and --gguf-metadata are not yet taken with a quantizing --dtype " + forgetTarget);
            forget();
            return Amn.OK;
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
        ForgetCommand.run(parent.context(), input, forgetTarget, ForgetOptions.defaults(), null, output);
    }
}
