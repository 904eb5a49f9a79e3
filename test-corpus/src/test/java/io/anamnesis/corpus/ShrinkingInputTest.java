package io.anamnesis.corpus;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.DType;
import io.anamnesis.api.ErrorKind;
import io.anamnesis.api.RecoveryPlan;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.WriteOptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * An input that another process truncates after it was opened (issue 8, item 2), for every
 * reader and through both writers (remember's safetensors, convert's gguf) and materialize:
 * an I/O error, "the input changed" or "shrank", and nothing written; never an internal error.
 */
class ShrinkingInputTest {
    @TempDir
    Path dir;

    static Stream<Arguments> files() {
        return SeedFiles.all().entrySet().stream().map(e -> Arguments.of(e.getKey(), e.getValue()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("files")
    void anInputTruncatedAfterOpenIsATypedIoErrorAndNothingIsWritten(String name, byte[] content) throws IOException {
        Anamnesis amn = Anamnesis.installed();
        for (String format : new String[]{"safetensors", "gguf"}) {
            Path in = Files.write(dir.resolve(name), content);
            Path out = dir.resolve("out." + format);
            try (TensorArchive archive = amn.open(in)) {
                RecoveryPlan plan = amn.plan(archive, DType.F32);
                long header = Math.max(1, content.length - plan.outputs().stream()
                        .filter(t -> t.byteSize() > 0).mapToLong(PlannedTensor::byteSize).min().orElse(1));
                truncate(in, Math.min(header, content.length / 2));
                Throwable write = catchThrowable(() -> amn.writer(format).write(plan.toOutputPlan(), out, WriteOptions.threads(2)));
                assertThat(write).as(name + " -> " + format).isInstanceOf(AnamnesisException.class);
                assertThat(((AnamnesisException) write).kind()).as(name + " -> " + format + ": " + write.getMessage())
                        .isIn(ErrorKind.IO, ErrorKind.MALFORMED);
                assertThat(out).doesNotExist();
                for (PlannedTensor t : plan.outputs()) {
                    if (t.byteSize() == 0) continue;
                    try (Arena arena = Arena.ofConfined()) {
                        Throwable m = catchThrowable(() -> plan.materialize(t.name(), arena));
                        if (m != null) assertThat(m).as(name + " materialize " + t.name()).isInstanceOf(AnamnesisException.class);
                    }
                }
            }
        }
    }

    private static void truncate(Path p, long size) throws IOException {
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
            ch.truncate(size);
        }
    }
}
