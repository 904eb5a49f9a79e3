package io.anamnesis.corpus;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.DType;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.RecoveryPlan;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.spi.FormatReader;
import io.anamnesis.api.spi.PlannedTensor;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * What every coverage-guided fuzz target ({@code *FuzzTarget}, Jazzer) shares: one scratch
 * file per JVM that each input is written to, and the whole library route over an opened
 * archive. The promise under test is the one {@code HostileInputTest} checks by mutation:
 * any input ends in success or one typed {@link AnamnesisException}; anything else that
 * escapes (an unchecked exception, an error, an oversized plan) is a finding.
 *
 * <p>The build runs each target for {@code fuzz.budget} (a few seconds) in fuzzing mode and,
 * with every other test, on its seeds and the regression inputs committed under
 * {@code src/test/resources/io/anamnesis/corpus/<Target>Inputs/}; {@code docs/robustness.md}
 * says how to run a longer campaign.
 */
final class Fuzzing {
    private Fuzzing() {
    }

    /** Outputs up to this size are produced; above it they must be in proportion to the input. */
    static final long OUTPUT_FLOOR = 16L << 20;
    static final long OUTPUT_RATIO = 64;

    private static final Path DIR;

    static {
        try {
            DIR = Files.createTempDirectory("amn-fuzz");
            DIR.toFile().deleteOnExit();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Writes the input to this JVM's scratch file of that name (replacing the last input). */
    static Path file(String name, byte[] content) {
        try {
            Path p = DIR.resolve(name);
            Files.write(p, content);
            p.toFile().deleteOnExit();
            return p;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static FormatReader reader(String format) {
        return Anamnesis.installed().readers().stream().filter(r -> r.format().equals(format)).findFirst()
                .orElseThrow(() -> new IllegalStateException("no " + format + " reader installed"));
    }

    /** Opens with one reader (not detection: the fuzzer's bytes should reach this parser) and runs everything. */
    static void open(String format, String fileName, byte[] input) {
        Path p = file(fileName, input);
        try (TensorArchive archive = reader(format).open(p, ParseLimits.defaults())) {
            exercise(archive, input.length);
        } catch (AnamnesisException expected) {
            // the promise: a typed error
        }
    }

    /** Detects the format like amn does, then runs everything. */
    static void detectAndOpen(String fileName, byte[] input) {
        Path p = file(fileName, input);
        try (TensorArchive archive = Anamnesis.installed().open(p)) {
            exercise(archive, input.length);
        } catch (AnamnesisException expected) {
            // the promise: a typed error
        }
    }

    /**
     * Metadata, properties, every tensor's bytes, a recovery plan in F32 and each output
     * produced whole, then the narrowing kernels (BF16 or F16 by the parity of the size).
     */
    static void exercise(TensorArchive archive, long inputBytes) {
        archive.format();
        archive.metadata();
        archive.properties();
        archive.structuredMetadata();
        for (TensorEntry e : archive.tensors()) {
            try (Arena arena = Arena.ofConfined()) {
                archive.data(e, arena);
            } catch (AnamnesisException expected) {
                // one unreadable tensor is not the end of the others
            }
        }
        produce(archive, DType.F32, inputBytes);
        produce(archive, inputBytes % 2 == 0 ? DType.BF16 : DType.F16, inputBytes);
    }

    private static void produce(TensorArchive archive, DType target, long inputBytes) {
        RecoveryPlan plan = Anamnesis.installed().plan(archive, target);
        plan.problems();
        plan.schemeDescriptions();
        long allowed = Math.max(OUTPUT_FLOOR, OUTPUT_RATIO * inputBytes);
        for (PlannedTensor t : plan.outputs()) {
            if (t.byteSize() > allowed) {
                throw new AssertionError("the plan declares output '" + t.name() + "' " + t.dtype() + " " + t.shape()
                        + " of " + t.byteSize() + " bytes from an input of " + inputBytes + " bytes");
            }
        }
        for (PlannedTensor t : plan.outputs()) {
            try (Arena arena = Arena.ofConfined()) {
                plan.materialize(t.name(), arena);
            }
        }
    }

    /**
     * The shared corpus's inputs with one of these extensions, up to {@code maxBytes} each, as
     * further seeds when the corpus is there (the built-in seeds keep a target meaningful
     * without it).
     */
    static Stream<byte[]> corpusSeeds(int maxBytes, String... extensions) {
        var root = CorpusCase.root();
        if (root.isEmpty()) return Stream.empty();
        List<byte[]> out = new ArrayList<>();
        for (CorpusCase c : CorpusCase.all(root.get())) {
            for (String ext : extensions) {
                Path in = c.dir().resolve("input." + ext);
                try {
                    if (Files.isRegularFile(in) && Files.size(in) <= maxBytes) out.add(Files.readAllBytes(in));
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        }
        return out.stream();
    }
}
