package io.anamnesis.format.pth;

import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedOutputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Opening reads the central directory, local headers and data.pkl, never tensor bytes; and
 * a contiguous tensor's data() is a mapping, not a read.
 */
class InspectReadsLittleTest {
    @TempDir
    Path dir;

    static final int TENSORS = 48;
    static final int ROWS = 256;
    static final int COLS = 1024; // 1 MiB of F32 per tensor

    /** torch.save's shape of file, 48 MiB of storages, streamed to disk. */
    private Path bigCheckpoint() throws Exception {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark();
        for (int t = 0; t < TENSORS; t++) {
            p.unicode("layers." + t + ".weight").contiguous("FloatStorage", Integer.toString(t), ROWS, COLS);
        }
        byte[] pickle = p.setItems().stop().bytes();
        Path file = dir.resolve("big.pth");
        byte[] storage = new byte[ROWS * COLS * 4];
        try (OutputStream os = new BufferedOutputStream(Files.newOutputStream(file), 1 << 20);
             ZipOutputStream zos = new ZipOutputStream(os)) {
            put(zos, "archive/data.pkl", pickle);
            for (int t = 0; t < TENSORS; t++) {
                // Element 0 of tensor t holds t, so data() can be checked without reading the rest.
                java.nio.ByteBuffer.wrap(storage).order(java.nio.ByteOrder.LITTLE_ENDIAN).putFloat(0, t);
                put(zos, "archive/data/" + t, storage);
            }
            put(zos, "archive/version", "3\n".getBytes(StandardCharsets.US_ASCII));
        }
        return file;
    }

    private static void put(ZipOutputStream zos, String name, byte[] data) throws Exception {
        ZipEntry e = new ZipEntry(name);
        e.setMethod(ZipEntry.STORED);
        CRC32 crc = new CRC32();
        crc.update(data);
        e.setSize(data.length);
        e.setCompressedSize(data.length);
        e.setCrc(crc.getValue());
        zos.putNextEntry(e);
        zos.write(data);
        zos.closeEntry();
    }

    @Test
    void openReadsUnderOneMebibyteAndDataIsMappedNotRead() throws Exception {
        Path file = bigCheckpoint();
        long size = Files.size(file);
        assertThat(size).isGreaterThan((long) TENSORS * ROWS * COLS * 4);
        CountingChannel ch = new CountingChannel(FileChannel.open(file, StandardOpenOption.READ));
        long t0 = System.nanoTime();
        try (PthArchive a = PthReader.open(file, ch, ParseLimits.defaults())) {
            long openNanos = System.nanoTime() - t0;
            assertThat(a.tensors()).hasSize(TENSORS);
            long read = ch.bytesRead.get();
            assertThat(read).as("bytes read by open() of a %d-byte file", size).isLessThan(1 << 20);
            assertThat(ch.bytesMapped.get()).isZero();
            System.out.printf("open of %d MiB checkpoint: %d bytes read, %.2f ms%n", size >> 20, read, openNanos / 1e6);

            try (Arena arena = Arena.ofConfined()) {
                TensorEntry e = a.tensor("layers.47.weight").orElseThrow();
                MemorySegment data = a.data(e, arena);
                assertThat(data.isMapped()).isTrue();
                assertThat(data.byteSize()).isEqualTo((long) ROWS * COLS * 4);
                assertThat(data.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0)).isEqualTo(47f);
            }
            assertThat(ch.bytesRead.get()).as("data() of a contiguous tensor reads nothing through the channel").isEqualTo(read);
        }
    }
}
