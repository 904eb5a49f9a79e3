package io.anamnesis.cli;

import io.anamnesis.api.DType;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.util.concurrent.Callable;

/** {@code amn convert}: the same recovery, written in any installed writer's format. */
@Command(name = "convert", sortOptions = false,
        header = "Recover quantized tensors and write the result in another format.",
        description = "Reads the input, recovers every quantized group to --dtype, and writes it with the "
                + "writer of --to (see 'amn formats'). A format without an installed writer is refused up front "
                + "with the module to add. Metadata goes along whole and typed: GGUF to safetensors keeps every "
                + "GGUF key/value in the typed-json/1 encoding, safetensors to GGUF restores them; the summary "
                + "says how many keys a conversion dropped (--debug names them).",
        mixinStandardHelpOptions = true,
        footerHeading = "%n", footer = "Exit codes: see 'amn --help'.")
final class ConvertCommand implements Callable<Integer> {
    @ParentCommand
    Amn parent;

    @Parameters(index = "0", paramLabel = "<file>", description = "A tensor file, or ollama:<model>[:<tag>].")
    String input;

    @Option(names = "--to", paramLabel = "<format>", required = true,
            description = "Output format: safetensors, gguf, ... (a writer's name or extension).")
    String format;

    @Option(names = "--dtype", paramLabel = "<dtype>", defaultValue = "bf16", converter = TargetConverter.class,
            description = "Dtype of recovered tensors: bf16, f16 or f32 (default: ${DEFAULT-VALUE}).")
    DType target;

    @Option(names = "--as-stored", description = "Recover nothing: copy every tensor as stored (quantized payloads and "
            + "their scales included), a pure container conversion.")
    boolean asStored;

    @Mixin
    Recover.OutputOptions output;

    @Mixin
    GgufMetadataOptions gguf = new GgufMetadataOptions();

    @Override
    public Integer call() {
        var typed = gguf.values();
        if (!typed.isEmpty() && !parent.context().amn().writer(format).format().equals("gguf")) {
            throw new UsageException("--gguf-kv and --gguf-metadata set GGUF key/values: they need --to gguf, not --to " + format);
        }
        Recover.run(parent.context(), input, format, target, output, asStored, typed);
        return Amn.OK;
    }
}
