package io.anamnesis.cli;

import io.anamnesis.api.DType;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.util.concurrent.Callable;

/** {@code amn remember}: recover every quantized tensor and write safetensors. */
@Command(name = "remember", aliases = "dequantize", sortOptions = false,
        header = "Recover every quantized tensor to bf16, f16 or f32 and write a .safetensors file.",
        description = "Quantized groups (FP8 + scales, GPTQ/AWQ qweight + qzeros + scales, bitsandbytes, "
                + "compressed-tensors, gpt-oss MXFP4 blocks, GGUF blocks) become one dense tensor each; plain tensors "
                + "pass through unchanged; the metadata is kept. A tensor that still looks quantized (its scheme's "
                + "module missing, a companion missing) is refused (exit 6), never copied as if recovered. The "
                + "output appears complete or not at all.",
        mixinStandardHelpOptions = true,
        footerHeading = "%n", footer = "Exit codes: see 'amn --help'.")
final class RememberCommand implements Callable<Integer> {
    @ParentCommand
    Amn parent;

    @Parameters(index = "0", paramLabel = "<file>", description = "A tensor file, or ollama:<model>[:<tag>].")
    String input;

    @Option(names = "--to", paramLabel = "<dtype>", defaultValue = "bf16", converter = TargetConverter.class,
            description = "Dtype of recovered tensors: bf16, f16 or f32 (default: ${DEFAULT-VALUE}).")
    DType target;

    @Mixin
    Recover.OutputOptions output;

    @Override
    public Integer call() {
        Recover.run(parent.context(), "remember", input, "safetensors", target, output, false);
        return Amn.OK;
    }
}
