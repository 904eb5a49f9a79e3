package io.anamnesis.format.pth;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.UnsupportedFeatureException;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The stream {@code torch.save} wrote before torch 1.6: five pickles in a row (the magic
 * number, the protocol version, the writer's system info, the checkpoint, the storage keys),
 * then each storage in key order as an 8-byte element count and its bytes. Reads the pickles
 * and one count per storage; never tensor bytes.
 */
final class LegacyLayout {
    /** torch.serialization.MAGIC_NUMBER, as pickled by LONG1: 10 bytes little-endian. */
    static final BigInteger MAGIC = new BigInteger("1950a86a20f9469cfc6c", 16);
    static final byte[] MAGIC_LONG1 = {(byte) 0x8a, 0x0a,
            0x6c, (byte) 0xfc, (byte) 0x9c, 0x46, (byte) 0xf9, 0x20, 0x6a, (byte) 0xa8, 0x50, 0x19};

    private LegacyLayout() {
    }

    static PthArchive read(Path path, FileChannel ch, long size, ParseLimits limits) throws IOException {
        Unpickler vm = new Unpickler(limits);
        Checkpoint cp;
        boolean hostLittle;
        Map<String, Long> storageOffsets = new HashMap<>();
        // The pickles are read through a mapping closed before open returns; only the pages
        // they touch (and one count per storage) are read, never the storage bytes.
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment file = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, scratch);
            Object magic = vm.load(file, 0, pickleEnd(0, size, limits));
            if (!(magic instanceof Long || magic instanceof BigInteger) || !MAGIC.equals(asBig(magic))) {
                throw new MalformedFileException("legacy torch stream does not start with torch's magic number");
            }
            Object protocol = vm.load(file, vm.position(), pickleEnd(vm.position(), size, limits));
            if (!Long.valueOf(1001).equals(protocol)) {
                throw new UnsupportedFeatureException("legacy torch serialization protocol " + protocol + " (expected 1001)");
            }
            Object sysInfo = vm.load(file, vm.position(), pickleEnd(vm.position(), size, limits));
            // torch's legacy writer stores counts and storages little-endian whatever the host
            // (THPStorage_writeFileRaw); the sys_info flag only reports the writer's host.
            hostLittle = littleEndianFlag(sysInfo);
            Object root = vm.load(file, vm.position(), pickleEnd(vm.position(), size, limits));
            Object keys = vm.load(file, vm.position(), pickleEnd(vm.position(), size, limits));
            if (!(keys instanceof PyValue.PyList keyList)) throw new MalformedFileException("legacy storage key list is a " + Unpickler.kind(keys));
            cp = Checkpoint.walk(root, limits, Checkpoint.budget(vm.totalValues, limits));

            long pos = vm.position();
            for (Object k : keyList.items) {
                if (!(k instanceof String key)) throw new MalformedFileException("legacy storage key is a " + Unpickler.kind(k));
                PyValue.Storage s = vm.storages.get(key);
                if (s == null) throw new MalformedFileException("legacy storage " + key + " is listed but never referenced");
                if (s.dtype() == null) throw new UnsupportedFeatureException("legacy storage " + key + " of type " + s.typeName());
                if (size - pos < 8) throw new MalformedFileException("legacy file ends before storage " + key);
                long count = PthReader.readAt(ch, pos, 8).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
                if (count < 0 || count > (size - pos - 8) / s.dtype().elementBytes()) {
                    throw new MalformedFileException("legacy storage " + key + " declares " + count
                            + " elements, more than the file holds: the file is truncated");
                }
                if (count < s.numel()) {
                    throw new MalformedFileException("legacy storage " + key + " holds " + count + " elements, the pickle declares " + s.numel());
                }
                if (storageOffsets.put(key, pos + 8) != null) throw new MalformedFileException("legacy storage " + key + " is listed twice");
                pos += 8 + count * s.dtype().elementBytes();
            }
        }
        PthReader.StorageOffsets storages = f -> {
            Long at = storageOffsets.get(f.tensor().storage().key());
            if (at != null) return at;
            if (f.tensor().storage().numel() != 0) {
                throw MalformedFileException.inTensor(f.name(), "its storage " + f.tensor().storage().key() + " is not in the file");
            }
            return 0L;
        };
        Map<String, String> props = new LinkedHashMap<>();
        props.put("layout", "legacy");
        props.put("byte order", "little-endian" + (hostLittle ? "" : " (written on a big-endian host)"));
        // storages are little-endian whatever the writer's host (above): never swapped
        return PthReader.archive(path, ch, size, vm, cp, storages, false, props, limits);
    }

    private static long pickleEnd(long start, long size, ParseLimits limits) {
        return start + Math.min(size - start, limits.maxPickleBytes());
    }

    private static BigInteger asBig(Object o) {
        return o instanceof Long l ? BigInteger.valueOf(l) : (BigInteger) o;
    }

    private static boolean littleEndianFlag(Object sysInfo) {
        if (sysInfo instanceof PyValue.PyDict d) {
            for (int i = 0; i < d.keys.size(); i++) {
                if ("little_endian".equals(d.keys.get(i)) && d.values.get(i) instanceof Boolean b) return b;
            }
        }
        return true;
    }
}
