package io.anamnesis.api;

import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.write.AtomicOutput;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.ProgressListener;
import io.anamnesis.api.write.TensorDataWriter;
import io.anamnesis.api.spi.WriteOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class WriterEngineTest {
    @TempDir
    Path dir;

    /** Element i of tensor t is the float t * 1e6 + i, written as F32; checks it is asked for whole granules. */
    static PlannedTensor counting(String name, int t, long elements, long granule) {
        return new PlannedTensor(name, DType.F32, Shape.of(elements), granule, arena -> (first, count, dest) -> {
            if (first % granule != 0 || (count % granule != 0 && first + count != elements)) {
                throw new AssertionError("chunk [" + first + ", +" + count + ") splits a granule of " + granule);
            }
            for (long i = 0; i < count; i++) dest.setAtIndex(LittleEndian.F32, i, t * 1e6f + (first + i));
        });
    }

    static List<TensorDataWriter.Region> layout(List<PlannedTensor> tensors) {
        List<TensorDataWriter.Region> regions = new ArrayList<>();
        long offset = 16; // pretend header
        for (PlannedTensor t : tensors) {
            regions.add(new TensorDataWriter.Region(offset, t));
            offset += t.byteSize();
        }
        return regions;
    }

    byte[] write(List<PlannedTensor> tensors, int threads, AtomicLong progress) throws Exception {
        Path out = dir.resolve("out-" + threads + ".bin");
        AtomicLong started = new AtomicLong();
        ProgressListener listener = new ProgressListener() {
            @Override
            public void started(long totalBytes) {
                started.set(totalBytes);
            }

            @Override
            public void advanced(long bytes) {
                progress.addAndGet(bytes);
            }
        };
        AtomicOutput.write(out, ch -> TensorDataWriter.write(ch, layout(tensors), new WriteOptions(threads, listener)));
        assertThat(started.get()).isEqualTo(tensors.stream().mapToLong(PlannedTensor::byteSize).sum());
        return Files.readAllBytes(out);
    }

    @Test
    void everyElementLandsAtItsOffsetAtAnyThreadCount() throws Exception {
        // 17.5 M floats = 70 MB: more than one 64 MiB slab and many 4 MiB chunks.
        List<PlannedTensor> tensors = List.of(
                counting("big", 1, 17_500_000, 7 * 1000),
                counting("small", 2, 10, 1),
                counting("empty", 3, 0, 1),
                counting("odd", 4, 1_000_003, 1_000_003));
        AtomicLong progress1 = new AtomicLong();
        byte[] one = write(tensors, 1, progress1);
        byte[] three = write(tensors, 3, new AtomicLong());
        assertThat(three).isEqualTo(one);
        assertThat(progress1.get()).isEqualTo(4L * (17_500_000 + 10 + 1_000_003));

        ByteBuffer b = ByteBuffer.wrap(one).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(b.getFloat(16)).isEqualTo(1e6f);
        assertThat(b.getFloat(16 + 4 * 12_345_678)).isEqualTo(1e6f + 12_345_678);
        int smallAt = 16 + 4 * 17_500_000;
        assertThat(b.getFloat(smallAt + 4 * 9)).isEqualTo(2e6f + 9);
        assertThat(b.getFloat(smallAt + 40 + 4 * 1_000_002)).isEqualTo(4e6f + 1_000_002);
        assertThat(one.length).isEqualTo(smallAt + 40 + 4 * 1_000_003);
    }

    @Test
    void aFailingProducerLeavesNoFileBehind() throws Exception {
        PlannedTensor boom = new PlannedTensor("boom", DType.F32, Shape.of(1000), 1, arena -> (first, count, dest) -> {
            throw MalformedFileException.inTensor("boom", "bad data");
        });
        Path out = dir.resolve("never.bin");
        assertThatThrownBy(() -> AtomicOutput.write(out, ch ->
                TensorDataWriter.write(ch, layout(List.of(counting("ok", 1, 100, 1), boom)), WriteOptions.threads(2))))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("boom");
        try (var files = Files.list(dir)) {
            assertThat(files.toList()).isEmpty();
        }
    }

    @Test
    void anExistingTargetIsReplacedWhole() throws Exception {
        Path out = Files.writeString(dir.resolve("t.bin"), "old content that is longer");
        AtomicOutput.write(out, ch -> ch.write(ByteBuffer.wrap(new byte[]{1, 2, 3})));
        assertThat(Files.readAllBytes(out)).containsExactly(1, 2, 3);
    }

    /**
     * A tensor stored as it is written is copied from its region of the input file, not
     * through its producer (which here would fail), in slabs beside ordinary tensors and at
     * any thread count; the output channel's position is what it was.
     */
    @Test
    void aStoredCopyTakesItsBytesFromTheFileRegion() throws Exception {
        int n = (64 << 20) / 4 + 12345; // a slab of 64 MiB (the engine's) and a short one
        byte[] stored = new byte[64 + 4 * n];
        for (int i = 0; i < stored.length; i++) stored[i] = (byte) (i * 31 + (i >> 11));
        Path input = Files.write(dir.resolve("stored.bin"), stored);
        try (FileChannel in = FileChannel.open(input, StandardOpenOption.READ)) {
            PlannedTensor copied = new PlannedTensor("c", DType.F32, Shape.of(n), 1, new io.anamnesis.api.spi.TensorProducer.StoredCopy(
                    new StoredRegion(in, 64), arena -> {
                        throw new AssertionError("the mapped path was taken");
                    }));
            for (int threads : new int[]{1, 2}) {
                Path out = dir.resolve("copied-" + threads + ".bin");
                long[] position = new long[2];
                AtomicLong advanced = new AtomicLong();
                ProgressListener listener = new ProgressListener() {
                    @Override
                    public void started(long totalBytes) {
                    }

                    @Override
                    public void advanced(long bytes) {
                        advanced.addAndGet(bytes);
                    }
                };
                AtomicOutput.write(out, ch -> {
                    ch.position(7);
                    position[0] = ch.position();
                    TensorDataWriter.write(ch, layout(List.of(counting("a", 1, 1000, 1), copied, counting("b", 2, 1000, 1))),
                            new WriteOptions(threads, listener));
                    position[1] = ch.position();
                });
                byte[] got = Files.readAllBytes(out);
                ByteBuffer b = ByteBuffer.wrap(got).order(ByteOrder.LITTLE_ENDIAN);
                assertThat(b.getFloat(16 + 4 * 999)).isEqualTo(1e6f + 999);
                assertThat(java.util.Arrays.copyOfRange(got, 16 + 4000, 16 + 4000 + 4 * n))
                        .as("%d threads", threads).isEqualTo(java.util.Arrays.copyOfRange(stored, 64, stored.length));
                assertThat(b.getFloat(16 + 4000 + 4 * n)).isEqualTo(2e6f);
                assertThat(position[1]).isEqualTo(position[0]);
                assertThat(advanced.get()).isEqualTo(8000L + 4L * n);
            }
            // a region that runs past the file's end: the input changed under us, nothing written
            PlannedTensor beyond = new PlannedTensor("d", DType.F32, Shape.of(n), 1, new io.anamnesis.api.spi.TensorProducer.StoredCopy(
                    new StoredRegion(in, 4096), arena -> (first, count, dest) -> {
                    }));
            Path out = dir.resolve("beyond.bin");
            assertThatThrownBy(() -> AtomicOutput.write(out,
                    ch -> TensorDataWriter.write(ch, layout(List.of(beyond)), WriteOptions.threads(2))))
                    .isInstanceOf(TensorIOException.class)
                    .hasMessageContaining("the input changed while it was being read");
            assertThat(out).doesNotExist();
        }
    }

    /**
     * A producer whose mapped input shrinks under it gets SIGBUS, which the JVM reports as an
     * InternalError; the engine turns it into the typed "input changed" error.
     */
    @Test
    void anInputThatShrinksUnderItsMappingIsATypedIoError() throws Exception {
        Path input = dir.resolve("input.bin");
        Files.write(input, new byte[1 << 20]);
        PlannedTensor shrinking = new PlannedTensor("w", DType.F32, Shape.of(1 << 18), 1, arena -> {
            MemorySegment mapped;
            try (FileChannel ch = FileChannel.open(input, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                mapped = ch.map(FileChannel.MapMode.READ_ONLY, 0, 1 << 20, arena);
                ch.truncate(0); // another process truncates the file
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            return (first, count, dest) -> MemorySegment.copy(mapped, first * 4, dest, 0, count * 4);
        });
        Path out = dir.resolve("out.bin");
        assertThatThrownBy(() -> AtomicOutput.write(out,
                ch -> TensorDataWriter.write(ch, layout(List.of(shrinking)), WriteOptions.threads(2))))
                .isInstanceOf(TensorIOException.class)
                .hasMessageContaining("the input changed while it was being read");
        assertThat(out).doesNotExist();
        RecoveryPlan plan = new RecoveryPlan(null, DType.F32, List.of(), java.util.Map.of(), java.util.Map.of(),
                List.of(shrinking), List.of());
        Files.write(input, new byte[1 << 20]);
        try (Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> plan.materialize("w", arena))
                    .isInstanceOf(TensorIOException.class)
                    .hasMessageContaining("the input changed while it was being read");
        }
    }
}
