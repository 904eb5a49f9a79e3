package io.anamnesis.format.pth;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/** Builds torch.save-shaped files in tests: a STORED zip of records, or the legacy stream. */
final class TorchFiles {
    private TorchFiles() {
    }

    /** Records in insertion order; names are written as given (include the prefix). */
    static final class Zip {
        final Map<String, byte[]> records = new LinkedHashMap<>();
        int method = ZipEntry.STORED;
        String comment = "";

        Zip record(String name, byte[] data) {
            records.put(name, data);
            return this;
        }

        /** A checkpoint under {@code prefix/}: data.pkl first, then the given storages, then version. */
        static Zip checkpoint(String prefix, byte[] pickle, Map<String, byte[]> storages) {
            Zip z = new Zip().record(prefix + "/data.pkl", pickle);
            storages.forEach((k, v) -> z.record(prefix + "/data/" + k, v));
            return z.record(prefix + "/version", "3\n".getBytes(StandardCharsets.US_ASCII));
        }

        byte[] bytes() {
            ByteArrayOutputStream bos = new ByteArrayOutputStream();
            try (ZipOutputStream zos = new ZipOutputStream(bos)) {
                if (!comment.isEmpty()) zos.setComment(comment);
                for (var e : records.entrySet()) {
                    ZipEntry ze = new ZipEntry(e.getKey());
                    ze.setMethod(method);
                    if (method == ZipEntry.STORED) {
                        CRC32 crc = new CRC32();
                        crc.update(e.getValue());
                        ze.setSize(e.getValue().length);
                        ze.setCompressedSize(e.getValue().length);
                        ze.setCrc(crc.getValue());
                    }
                    zos.putNextEntry(ze);
                    zos.write(e.getValue());
                    zos.closeEntry();
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return bos.toByteArray();
        }

        Path write(Path dir, String file) {
            return TorchFiles.write(dir.resolve(file), bytes());
        }
    }

    /**
     * The same records as a ZIP64 archive whose every size and offset lives in ZIP64 extra
     * fields (APPNOTE 4.5.3) and whose end record points to a ZIP64 end record, as writers
     * do past 4 GiB; written by hand since java.util.zip only does so for large archives.
     */
    static byte[] zip64(Map<String, byte[]> records) {
        ByteBuffer b = ByteBuffer.allocate(1 << 20).order(ByteOrder.LITTLE_ENDIAN);
        Map<String, Long> offsets = new LinkedHashMap<>();
        for (var e : records.entrySet()) {
            byte[] name = e.getKey().getBytes(StandardCharsets.UTF_8);
            offsets.put(e.getKey(), (long) b.position());
            b.putInt(0x04034b50).putShort((short) 45).putShort((short) 0).putShort((short) 0).putInt(0)
                    .putInt(crc(e.getValue())).putInt(-1).putInt(-1)
                    .putShort((short) name.length).putShort((short) 20).put(name)
                    .putShort((short) 1).putShort((short) 16).putLong(e.getValue().length).putLong(e.getValue().length)
                    .put(e.getValue());
        }
        long cdStart = b.position();
        for (var e : records.entrySet()) {
            byte[] name = e.getKey().getBytes(StandardCharsets.UTF_8);
            b.putInt(0x02014b50).putShort((short) 45).putShort((short) 45).putShort((short) 0).putShort((short) 0).putInt(0)
                    .putInt(crc(e.getValue())).putInt(-1).putInt(-1)
                    .putShort((short) name.length).putShort((short) 28).putShort((short) 0)
                    .putShort((short) 0).putShort((short) 0).putInt(0).putInt(-1).put(name)
                    .putShort((short) 1).putShort((short) 24).putLong(e.getValue().length).putLong(e.getValue().length)
                    .putLong(offsets.get(e.getKey()));
        }
        long cdSize = b.position() - cdStart;
        long z64 = b.position();
        b.putInt(0x06064b50).putLong(44).putShort((short) 45).putShort((short) 45).putInt(0).putInt(0)
                .putLong(records.size()).putLong(records.size()).putLong(cdSize).putLong(cdStart);
        b.putInt(0x07064b50).putInt(0).putLong(z64).putInt(1);
        b.putInt(0x06054b50).putShort((short) 0).putShort((short) 0).putShort((short) -1).putShort((short) -1)
                .putInt(-1).putInt(-1).putShort((short) 0);
        byte[] out = new byte[b.position()];
        b.flip().get(out);
        return out;
    }

    private static int crc(byte[] data) {
        CRC32 c = new CRC32();
        c.update(data);
        return (int) c.getValue();
    }

    static Path write(Path p, byte[] bytes) {
        try {
            return Files.write(p, bytes);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Map<String, byte[]> storages(Object... keyThenBytes) {
        Map<String, byte[]> m = new LinkedHashMap<>();
        for (int i = 0; i < keyThenBytes.length; i += 2) m.put((String) keyThenBytes[i], (byte[]) keyThenBytes[i + 1]);
        return m;
    }

    static byte[] f32(float... v) {
        ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) b.putFloat(f);
        return b.array();
    }

    static byte[] f32BigEndian(float... v) {
        ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.BIG_ENDIAN);
        for (float f : v) b.putFloat(f);
        return b.array();
    }

    static byte[] i64(long... v) {
        ByteBuffer b = ByteBuffer.allocate(8 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (long f : v) b.putLong(f);
        return b.array();
    }

    static byte[] i16BigEndian(short... v) {
        ByteBuffer b = ByteBuffer.allocate(2 * v.length).order(ByteOrder.BIG_ENDIAN);
        for (short f : v) b.putShort(f);
        return b.array();
    }

    /** Floats 0, 1, 2, ... n-1: a storage whose every element names its own index. */
    static float[] iota(int n) {
        float[] f = new float[n];
        for (int i = 0; i < n; i++) f[i] = i;
        return f;
    }

    /**
     * The legacy (pre-1.6) stream: magic, protocol 1001, sys_info, the main pickle, the key
     * list, then per key an 8-byte little-endian element count and the bytes.
     */
    static byte[] legacy(byte[] mainPickle, Map<String, byte[]> storages, Map<String, Integer> elementBytes) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        // LONG1 of 10 bytes: 0x1950a86a20f9469cfc6c little-endian.
        out.writeBytes(PickleWriter.proto(2).op(0x8a).raw(10)
                .raw(0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19).stop().bytes());
        out.writeBytes(PickleWriter.proto(2).integer(1001).stop().bytes());
        out.writeBytes(PickleWriter.proto(2).emptyDict().mark()
                .unicode("protocol_version").integer(1001)
                .unicode("little_endian").newTrue()
                .unicode("type_sizes").emptyDict().mark().unicode("short").integer(2).unicode("int").integer(4)
                .unicode("long").integer(4).setItems()
                .setItems().stop().bytes());
        out.writeBytes(mainPickle);
        PickleWriter keys = PickleWriter.proto(2).emptyList().mark();
        for (String k : storages.keySet()) keys.unicode(k);
        out.writeBytes(keys.appends().stop().bytes());
        for (var e : storages.entrySet()) {
            long count = e.getValue().length / elementBytes.get(e.getKey());
            out.writeBytes(i64(count));
            out.writeBytes(e.getValue());
        }
        return out.toByteArray();
    }
}
