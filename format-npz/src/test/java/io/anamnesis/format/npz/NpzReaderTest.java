package io.anamnesis.format.npz;

import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.FileProbe;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class NpzReaderTest {
    @TempDir
    Path dir;

    final NpzReader reader = new NpzReader();

    /** An NPY file as numpy writes it: magic, version, LE length, dict literal padded to 64 bytes. */
    static byte[] npy(int major, String headerDict, byte[] data) {
        int lengthBytes = major == 1 ? 2 : 4;
        int pre = 8 + lengthBytes;
        StringBuilder h = new StringBuilder(headerDict);
        while ((pre + h.length() + 1) % 64 != 0) h.append(' ');
        h.append('\n');
        byte[] header = h.toString().getBytes(StandardCharsets.ISO_8859_1);
        ByteBuffer b = ByteBuffer.allocate(pre + header.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
        b.put(NpyHeader.MAGIC).put((byte) major).put((byte) 0);
        if (major == 1) b.putShort((short) header.length);
        else b.putInt(header.length);
        b.put(header).put(data);
        return b.array();
    }

    static String dict(String descr, boolean fortran, String shape) {
        return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
    }

    static byte[] ints(ByteOrder order, int... v) {
        ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(order);
        for (int x : v) b.putInt(x);
        return b.array();
    }

    static byte[] floats(ByteOrder order, float... v) {
        ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(order);
        for (float x : v) b.putFloat(x);
        return b.array();
    }

    Path zip(String file, boolean deflate, Map<String, byte[]> members) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ZipOutputStream z = new ZipOutputStream(bytes)) {
            for (var m : members.entrySet()) {
                ZipEntry e = new ZipEntry(m.getKey());
                if (!deflate) {
                    e.setMethod(ZipEntry.STORED);
                    e.setSize(m.getValue().length);
                    CRC32 crc = new CRC32();
                    crc.update(m.getValue());
                    e.setCrc(crc.getValue());
                }
                z.putNextEntry(e);
                z.write(m.getValue());
                z.closeEntry();
            }
        }
        return Files.write(dir.resolve(file), bytes.toByteArray());
    }

    static int[] readInts(TensorArchive a, String name) {
        try (Arena arena = Arena.ofConfined()) {
            TensorEntry e = a.tensor(name).orElseThrow();
            return a.data(e, arena).toArray(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
        }
    }

    @Test
    void readsStoredArraysUnderTheirKeys() throws Exception {
        Map<String, byte[]> m = new LinkedHashMap<>();
        m.put("model/layer.0/weight.npy", npy(1, dict("<i4", false, "(2, 3)"), ints(ByteOrder.LITTLE_ENDIAN, 1, 2, 3, 4, 5, 6)));
        m.put("arr_0.npy", npy(1, dict("<f4", false, "()"), floats(ByteOrder.LITTLE_ENDIAN, 2.5f)));
        try (TensorArchive a = reader.open(zip("m.npz", false, m), ParseLimits.defaults())) {
            assertThat(a.tensors()).extracting(TensorEntry::name).containsExactly("model/layer.0/weight", "arr_0");
            assertThat(a.tensor("model/layer.0/weight").orElseThrow().shape()).isEqualTo(Shape.of(2, 3));
            assertThat(a.tensor("arr_0").orElseThrow().dtype()).isEqualTo(DType.F32);
            assertThat(a.tensor("arr_0").orElseThrow().shape()).isEqualTo(Shape.SCALAR);
            assertThat(readInts(a, "model/layer.0/weight")).containsExactly(1, 2, 3, 4, 5, 6);
            assertThat(a.properties()).containsEntry("compression", "stored (zero-copy)");
        }
    }

    @Test
    void inflatesDeflatedMembers() throws Exception {
        int[] values = new int[1000];
        Arrays.setAll(values, i -> i * 7 - 300);
        Path f = zip("c.npz", true, Map.of("x.npy", npy(1, dict("<i4", false, "(1000,)"), ints(ByteOrder.LITTLE_ENDIAN, values))));
        try (TensorArchive a = reader.open(f, ParseLimits.defaults())) {
            assertThat(readInts(a, "x")).containsExactly(values);
        }
    }

    @Test
    void transposesFortranOrderAndSwapsBigEndian() throws Exception {
        // Column-major [[1, 2, 3], [4, 5, 6]] is stored 1 4 2 5 3 6, here big-endian too.
        Path f = zip("f.npz", false, Map.of("f.npy",
                npy(1, dict(">i4", true, "(2, 3)"), ints(ByteOrder.BIG_ENDIAN, 1, 4, 2, 5, 3, 6))));
        try (TensorArchive a = reader.open(f, ParseLimits.defaults())) {
            assertThat(readInts(a, "f")).containsExactly(1, 2, 3, 4, 5, 6);
        }
    }

    @Test
    void swapsEachHalfOfABigEndianComplex() throws Exception {
        Path f = Files.write(dir.resolve("c.npy"), npy(1, dict(">c8", false, "(1,)"), floats(ByteOrder.BIG_ENDIAN, 1.5f, -2f)));
        try (TensorArchive a = reader.open(f, ParseLimits.defaults()); Arena arena = Arena.ofConfined()) {
            TensorEntry e = a.tensor("array").orElseThrow();
            assertThat(e.dtype()).isEqualTo(DType.C64);
            assertThat(a.data(e, arena).toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN)))
                    .containsExactly(1.5f, -2f);
        }
    }

    @Test
    void readsBareNpyOfEveryVersionAndBfloat16AsVoid2() throws Exception {
        for (int major = 1; major <= 3; major++) {
            Path f = Files.write(dir.resolve("v" + major + ".npy"),
                    npy(major, dict("|V2", false, "(2,)"), new byte[]{(byte) 0x80, 0x3F, 0x00, (byte) 0xC0}));
            try (TensorArchive a = reader.open(f, ParseLimits.defaults()); Arena arena = Arena.ofConfined()) {
                TensorEntry e = a.tensor("array").orElseThrow();
                assertThat(e.dtype()).isEqualTo(DType.BF16);
                assertThat(a.data(e, arena).toArray(ValueLayout.JAVA_BYTE)).containsExactly((byte) 0x80, 0x3F, 0x00, (byte) 0xC0);
                assertThat(a.properties()).containsEntry("npy version", major + ".0");
            }
        }
    }

    @Test
    void probesNpyMagicAndZipsOfNpyMembers() throws Exception {
        Path npz = zip("p.bin", false, Map.of("a.npy", npy(1, dict("<f4", false, "(1,)"), new byte[4])));
        Path other = zip("o.zip", false, Map.of("readme.txt", new byte[3]));
        assertThat(reader.canRead(probe(npz))).isTrue();
        assertThat(reader.canRead(probe(other))).isFalse();
        Path npy = Files.write(dir.resolve("x.dat"), npy(1, dict("<f4", false, "(1,)"), new byte[4]));
        assertThat(reader.canRead(probe(npy))).isTrue();
    }

    static FileProbe probe(Path p) throws Exception {
        byte[] b = Files.readAllBytes(p);
        return new FileProbe(p.getFileName().toString(), b.length, ByteBuffer.wrap(b, 0, Math.min(b.length, 4096)).slice());
    }

    Path npyFile(String header, byte[] data) throws Exception {
        return Files.write(dir.resolve("t" + System.nanoTime() + ".npy"), npy(1, header, data));
    }

    @Test
    void rejectsMalformedHeadersWithTheRightKind() throws Exception {
        byte[] four = new byte[16];
        assertThatThrownBy(() -> reader.open(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }", four), ParseLimits.defaults()))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("negative dimension");
        assertThatThrownBy(() -> reader.open(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': __import__('os'), }", four), ParseLimits.defaults()))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("not a literal");
        assertThatThrownBy(() -> reader.open(npyFile(dict("<f4", false, "(1099511627776, 1099511627776)"), four), ParseLimits.defaults()))
                .isInstanceOf(LimitExceededException.class);
        assertThatThrownBy(() -> reader.open(npyFile(dict("<f4", false, "(1000,)"), four), ParseLimits.defaults()))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("needs 4000 bytes");
        assertThatThrownBy(() -> reader.open(npyFile(dict("|O", false, "(1,)"), four), ParseLimits.defaults()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("object arrays");
        assertThatThrownBy(() -> reader.open(npyFile("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", four), ParseLimits.defaults()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("structured");
        assertThatThrownBy(() -> reader.open(npyFile(dict("<c16", false, "(1,)"), four), ParseLimits.defaults()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("complex128");
    }

    @Test
    void rejectsUnknownVersionsAndBadMagic() throws Exception {
        byte[] v9 = npy(1, dict("<f4", false, "(1,)"), new byte[4]);
        v9[6] = 9;
        assertThatThrownBy(() -> reader.open(Files.write(dir.resolve("v9.npy"), v9), ParseLimits.defaults()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("version 9.0");
        byte[] bad = npy(1, dict("<f4", false, "(1,)"), new byte[4]);
        bad[5] = 'X';
        assertThatThrownBy(() -> reader.open(Files.write(dir.resolve("bad.npy"), bad), ParseLimits.defaults()))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("bad magic");
    }

    @Test
    void refusesAZipBombFromItsDirectoryAlone() throws Exception {
        Path f = zip("bomb.npz", true, Map.of("w.npy", npy(1, dict("<f4", false, "(1024,)"), new byte[4096])));
        byte[] b = Files.readAllBytes(f);
        // Patch the central directory's uncompressed size to 3 GiB, as a bomb declares it.
        for (int i = b.length - 22; i >= 0; i--) {
            if (b[i] == 'P' && b[i + 1] == 'K' && b[i + 2] == 1 && b[i + 3] == 2) {
                ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putInt(i + 24, 0xC000_0000);
                break;
            }
        }
        Files.write(f, b);
        assertThatThrownBy(() -> reader.open(f, ParseLimits.defaults()))
                .isInstanceOf(LimitExceededException.class).hasMessageContaining("ratio");
        Path small = zip("s.npz", true, Map.of("w.npy", npy(1, dict("<f4", false, "(1024,)"), new byte[4096])));
        assertThatThrownBy(() -> reader.open(small, ParseLimits.defaults().withMaxInflatedBytes(1000)))
                .isInstanceOf(LimitExceededException.class);
    }

    @Test
    void rejectsATruncatedArchive() throws Exception {
        Path f = zip("t.npz", false, Map.of("w.npy", npy(1, dict("<f4", false, "(256,)"), new byte[1024])));
        byte[] b = Files.readAllBytes(f);
        Files.write(f, Arrays.copyOf(b, b.length / 2));
        assertThatThrownBy(() -> reader.open(f, ParseLimits.defaults())).isInstanceOf(MalformedFileException.class);
    }

    @Test
    void saysWhatIsWrongWithABrokenZipInZipTermsNotJavaOnes() throws Exception {
        Path f = zip("t.npz", false, Map.of("w.npy", npy(1, dict("<f4", false, "(256,)"), new byte[1024])));
        byte[] whole = Files.readAllBytes(f);
        for (int cut : new int[]{whole.length - 1, whole.length - 30, whole.length / 2, 10}) {
            Files.write(f, Arrays.copyOf(whole, cut));
            assertThatThrownBy(() -> reader.open(f, ParseLimits.defaults())).as("cut at %d", cut)
                    .isInstanceOf(MalformedFileException.class).hasMessageContaining("t.npz is not a readable ZIP archive: ")
                    .hasMessageNotContaining("FileChannelImpl").hasMessageNotContaining("Error reading Zip content");
        }
    }
}
