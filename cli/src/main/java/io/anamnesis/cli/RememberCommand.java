package io.anamnesis.cli;

import io.anamnesis.api.DType;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.util.Map;
import java.util.concurrent.Callable;

/** {@code amn remember}: recover every quantized tensor and write safetensors. */
@Command(name = "remember", aliases = "dequantize", sortOptions = false,
        header = "Recover every quantized tensor to bf16, f16 or f32 and write a .safetensors file or a model folder.",
        description = "Quantized groups (FP8 + scales, GPTQ/AWQ qweight + qzeros + scales, bitsandbytes, "
                + "compressed-tensors, gpt-oss MXFP4 blocks, GGUF blocks) become one dense tensor each; plain tensors "
                + "pass through unchanged; the metadata is kept whole (a GGUF file's typed key/values in the "
                + "typed-json/1 encoding), and the summary says how many keys were dropped (--debug names them). A "
                + "tensor that still looks quantized (its scheme's module missing, a companion missing) is refused "
                + "(exit 6), never copied as if recovered. A model folder in (a folder, its index or any shard) "
                + "gives a model folder out, as transformers writes one: shards, index, config.json without its "
                + "quantization_config, the other files copied. The output appears complete or not at all.",
        mixinStandardHelpOptions = true,
        footerHeading = "%n", footer = "Exit codes: see 'amn --help'.")
final class RememberCommand implements Callable<Integer> {
    @ParentCommand
    Amn parent;

    @Parameters(index = "0", paramLabel = "<file>", description = "A tensor file; a model folder, its index JSON or any "
            + "one shard (the whole model); or ollama:<model>[:<tag>].")
    String input;

    @Option(names = "--to", paramLabel = "<dtype>", defaultValue = "bf16", converter = TargetConverter.class,
            description = "Dtype of recovered tensors: bf16, f16 or f32 (default: ${DEFAULT-VALUE}).")
    DType target;

    @Mixin
    Recover.OutputOptions output;

    @Override
    public Integer call() {
        Recover.run(parent.context(), "remember", input, "safetensors", target, output, false, Map.of());
        return Amn.OK;
    }
}
