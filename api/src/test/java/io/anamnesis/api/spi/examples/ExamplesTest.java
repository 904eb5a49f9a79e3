package io.anamnesis.api.spi.examples;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.RecoveryPlan;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.WriteOptions;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The three examples the api's package documentation shows work as it says they do. */
class ExamplesTest {
    @TempDir
    Path dir;

    final Anamnesis amn = Anamnesis.of(List.of(new RawF32Reader()), List.of(new RawF32Writer()),
            List.of(new ScaledInt8Dequantizer()));

    @Test
    void theDequantizerRecoversQTimesStepAndTheWriterAndReaderRoundTripIt() {
        byte[] q = {-128, -3, 0, 1, 7, 127};
        float step = 0.0625f;
        MemoryArchive model = new MemoryArchive().bytes("w.q", DType.I8, new long[]{2, 3}, toInts(q)).f32("w.step", step);
        RecoveryPlan plan = amn.plan(model, DType.F32).requireComplete();
        Path file = dir.resolve("w.rawf32");
        amn.writer("rawf32").write(plan.toOutputPlan(), file, WriteOptions.threads(2));

        // the file, by the layout the reader's documentation gives
        ByteBuffer bytes = ByteBuffer.wrap(readAll(file)).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(new String(bytes.array(), 0, 6, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("RAWF32");
        assertThat(bytes.getLong(8)).isEqualTo(q.length);
        for (int i = 0; i < q.length; i++) assertThat(bytes.getFloat(16 + 4 * i)).isEqualTo(q[i] * step);

        try (TensorArchive back = amn.open(file); Arena arena = Arena.ofConfined()) {
            assertThat(back.format()).isEqualTo("rawf32");
            MemorySegment values = back.data(back.tensors().getFirst(), arena);
            for (int i = 0; i < q.length; i++) assertThat(values.getAtIndex(LittleEndian.F32, i)).isEqualTo(q[i] * step);
        }
    }

    @Test
    void aMissingStepIsAnErrorNamingTheTensor() {
        MemoryArchive model = new MemoryArchive().bytes("w.q", DType.I8, new long[]{2}, 1, 2);
        assertThatThrownBy(() -> amn.plan(model, DType.F32)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("w.step");
    }

    @Test
    void aCountLargerThanTheFileIsMalformed() throws Exception {
        ByteBuffer b = ByteBuffer.allocate(20).order(ByteOrder.LITTLE_ENDIAN).put(RawF32Reader.MAGIC).putLong(1L << 40);
        Path file = Files.write(dir.resolve("bad.rawf32"), b.array());
        assertThatThrownBy(() -> amn.open(file)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("count");
    }

    private static int[] toInts(byte[] b) {
        int[] out = new int[b.length];
        for (int i = 0; i < b.length; i++) out[i] = b[i];
        return out;
    }

    private static byte[] readAll(Path p) {
        try {
            return Files.readAllBytes(p);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
