package io.anamnesis.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Stream;

/**
 * Hidden: the build's AOT training runs ({@code AMN_AOT_TRAIN=... amn aot-train <samples>} and
 * {@code amn aot-train-recover <samples>}, once on each kind of kernels), where {@code <samples>} is a file or a folder of
 * sample files (the build's holds the bundled safetensors sample and a GGUF file made from
 * it). Each sample goes through the quick commands, or through {@code remember}, in one JVM,
 * output discarded, so that the AOT cache holds the classes and linked call sites of every
 * format the samples cover, not only the first one's (measured: a GGUF {@code inspect}
 * spent ~40 ms loading the GGUF classes and spinning their lambdas when the cache knew only
 * safetensors).
 *
 * <p>Deliberately not help or usage errors (picocli): with AOT class linking every cached
 * class is loaded at VM start, so caching picocli's JDK dependencies (reflection, proxies)
 * would slow {@code inspect} down to speed up rarer commands (measured: a 13 MB cache
 * instead of 21 MB, ~7 ms less CPU per inspect).
 */
@Command(name = "aot-train", hidden = true)
class AotTrainCommand implements Callable<Integer> {
    @ParentCommand
    Amn parent;

    @Parameters(index = "0", paramLabel = "<samples>")
    String sample;

    /** Which cache's training this is: the quick commands ({@code amn.aot}), recovery, forget, or convert to GGUF. */
    enum Training { QUICK, RECOVER, FORGET, CONVERT }

    Training training = Training.QUICK;

    /**
     * {@code amn aot-train-recover <samples>}: {@code remember} of each sample, and with
     * {@code AMN_KERNELS=auto} {@code forget} to GGUF types too; trains {@code amn-recover.aot}
     * on the scalar kernels and {@code amn-vector.aot} on the vector ones.
     */
    @Command(name = "aot-train-recover", hidden = true)
    static final class Recover extends AotTrainCommand {
        Recover() {
            training = Training.RECOVER;
        }
    }

    /**
     * {@code amn aot-train-forget <samples>}: each sample remembered to BF16, then that file
     * forgotten to the targets the launcher runs on the scalar kernels; trains
     * {@code amn-forget.aot}, a cache of its own so that forget's method profiles stay out of
     * remember's (see {@link #recoverRuns}).
     */
    @Command(name = "aot-train-forget", hidden = true)
    static final class Forget extends AotTrainCommand {
        Forget() {
            training = Training.FORGET;
        }
    }

    /**
     * {@code amn aot-train-convert <samples>}: {@link #convertRuns}, once; trains
     * {@code amn-convert.aot}, which the launcher gives {@code convert --to gguf} on the scalar
     * kernels. A cache of its own again: trained into forget's, the converter's producers made
     * the readers' call sites polymorphic, and a 1 GiB forget to q8_0 took 1.28 s instead of 1.18.
     */
    @Command(name = "aot-train-convert", hidden = true)
    static final class Convert extends AotTrainCommand {
        Convert() {
            training = Training.CONVERT;
        }
    }

    @Override
    public Integer call() throws IOException {
        PrintWriter sink = new PrintWriter(Writer.nullWriter());
        Amn.Context ctx = parent.context();
        // recovery and forget write files: into a folder of their own, deleted afterwards
        Path out = training == Training.QUICK ? null : Files.createTempDirectory("amn-aot-train");
        int failures = 0;
        try {
            if (training == Training.CONVERT) {
                // its own folder, written by the training: the samples are not model folders
                failures = run(ctx, sink, convertRuns(out));
            } else {
                int n = 0;
                for (String file : samples(Path.of(sample))) {
                    Path recovered = out == null ? null : out.resolve("recovered-" + n++ + ".safetensors");
                    List<String[]> runs = switch (training) {
                        case QUICK -> quickRuns(file);
                        case RECOVER -> recoverRuns(file, recovered);
                        case FORGET -> forgetRuns(file, recovered);
                        case CONVERT -> throw new IllegalStateException("convert trains on its own folder");
                    };
                    failures += run(ctx, sink, runs);
                }
            }
        } finally {
            if (out != null) deleteTree(out);
        }
        return failures == 0 ? Amn.OK : Amn.INTERNAL;
    }

    /** Runs each command line in this JVM, output discarded; says how many failed inside amn. */
    private static int run(Amn.Context ctx, PrintWriter sink, List<String[]> runs) {
        int failures = 0;
        for (String[] args : runs) {
            int code = Amn.execute(ctx.providers(), sink, sink, ctx.env(), ctx.home(), args);
            ctx.out().println(String.join(" ", args) + " -> " + code);
            if (code == Amn.INTERNAL) failures++;
        }
        return failures;
    }

    private static List<String[]> quickRuns(String sample) {
        return List.of(
                new String[]{"inspect", sample},
                new String[]{"inspect", "--to", "f32", sample},
                new String[]{"parse", sample},
                new String[]{"parse", "--json", sample},
                new String[]{"inspect", "--json", sample},
                new String[]{"formats"},
                new String[]{"inspect", sample + ".missing"});
    }

    /**
     * {@code remember} of the sample; on the vector kernels (the cache of {@code auto} and
     * {@code vector}, which forget to a GGUF type runs in) then {@code forget} to GGUF types.
     * The scalar cache is trained on {@code remember} alone: the method profiles it keeps are
     * those of the training runs, and forget's made remember's shared call sites (the writer,
     * the readers) look polymorphic: a 1 GiB Q8_0 remember took 1.30 s instead of 1.05 with a
     * cache trained on both (docs/benchmarks.md). A forget a sample cannot take still caches
     * what it loaded before it said so.
     */
    private static List<String[]> recoverRuns(String sample, Path output) {
        List<String[]> runs = new ArrayList<>();
        runs.add(new String[]{"remember", "--quiet", "--to", "bf16", "-o", output.toString(), sample});
        if ("scalar".equals(System.getProperty("anamnesis.kernels", "scalar"))) return runs;
        String stem = output.getFileName().toString().replaceFirst("\\.safetensors$", "");
        for (String target : VECTOR_TARGETS) {
            runs.add(new String[]{"forget", "--quiet", "--to", target, "-o",
                    output.resolveSibling(stem + "-" + target + ".gguf").toString(), sample});
        }
        return runs;
    }

    /** forget's targets that the launcher runs in {@code auto}: the GGUF encoders' scale searches, legacy, K and i-quants. */
    static final List<String> VECTOR_TARGETS = List.of("q4_0", "q4_k_m", "q6_k", "iq4_xs");

    /**
     * forget's targets that the launcher runs on the scalar kernels, with the options that
     * the samples' shapes allow (FP8 per channel: 128x128 blocks do not tile them).
     */
    static final List<List<String>> SCALAR_TARGETS = List.of(List.of("nf4"), List.of("nf4", "--double-quant"),
            List.of("fp4"), List.of("int8"), List.of("fp8", "--granularity", "channel"), List.of("q8_0"));

    /** {@code remember} of the sample to BF16, then {@code forget} of that file to each scalar target. */
    private static List<String[]> forgetRuns(String sample, Path recovered) {
        List<String[]> runs = new ArrayList<>();
        runs.add(new String[]{"remember", "--quiet", "--to", "bf16", "-o", recovered.toString(), sample});
        String stem = recovered.getFileName().toString().replaceFirst("\\.safetensors$", "");
        int k = 0;
        for (List<String> target : SCALAR_TARGETS) {
            List<String> args = new ArrayList<>(List.of("forget", "--quiet", "--to"));
            args.addAll(target);
            String ext = target.getFirst().startsWith("q") ? ".gguf" : ".safetensors";
            args.addAll(List.of("-o", recovered.resolveSibling(stem + "-" + k++ + ext).toString(), recovered.toString()));
            runs.add(args.toArray(String[]::new));
        }
        return runs;
    }

    /**
     * {@code convert} of a small Hugging Face llama folder to GGUF, quantized to q8_0 on the way
     * (with its SentencePiece vocabulary) and not, so that the cache holds the exporter's and the
     * vocabulary's classes and the profiles of its producers.
     * Without them a convert of a 1 GiB folder to q8_0 spent about 0.4 s more CPU than a forget
     * of its weights file, compiling (docs/benchmarks.md).
     */
    private static List<String[]> convertRuns(Path out) throws IOException {
        Path folder = TrainingFolder.write(out.resolve("llama"));
        List<String[]> runs = new ArrayList<>();
        for (String dtype : List.of("q8_0", "f16", "bf16")) {
            // the first with the folder's vocabulary, as people convert; the others without, as tests and
            // servers that want the weights alone do
            List<String> args = new ArrayList<>(List.of("convert", "--quiet"));
            if (!dtype.equals("q8_0")) args.add("--no-vocab");
            args.addAll(List.of("--to", "gguf", "--dtype", dtype, "-o", out.resolve("llama-" + dtype + ".gguf").toString(),
                    folder.toString()));
            runs.add(args.toArray(String[]::new));
        }
        return runs;
    }

    /** The sample, or the regular files of a folder of samples in name order. */
    private static List<String> samples(Path path) throws IOException {
        if (!Files.isDirectory(path)) return List.of(path.toString());
        List<String> files = new ArrayList<>();
        try (Stream<Path> s = Files.list(path)) {
            s.filter(Files::isRegularFile).map(Path::toString).sorted().forEach(files::add);
        }
        return files;
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
