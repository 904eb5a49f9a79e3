package io.anamnesis.format.pth;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The zip layout of torch 1.6 and later: {@code <prefix>/data.pkl}, an optional
 * {@code <prefix>/byteorder}, and one STORED {@code <prefix>/data/<key>} record per storage,
 * whose bytes are mapped in place. Reads the zip's directory, one local header per record
 * used, {@code data.pkl} and {@code byteorder}; never tensor bytes.
 */
final class ZipLayout {
    private ZipLayout() {
    }

    static PthArchive read(Path path, FileChannel ch, long size, ParseLimits limits) {
        ZipDirectory zip = ZipDirectory.read(ch, size, limits);
        ZipDirectory.Record pkl = null;
        for (ZipDirectory.Record r : zip.records.values()) {
            String n = r.name();
            if (n.endsWith("/data.pkl") && n.indexOf('/') == n.length() - "/data.pkl".length()) {
                if (pkl != null) throw new MalformedFileException("zip holds two checkpoints: " + pkl.name() + " and " + n);
                pkl = r;
            }
        }
        if (pkl == null) throw new MalformedFileException("zip has no <prefix>/data.pkl record: not a torch.save checkpoint");
        String prefix = pkl.name().substring(0, pkl.name().length() - "/data.pkl".length());
        // Read into one heap buffer, so also capped by what a Java array holds.
        ParseLimits.check("data.pkl bytes", pkl.size(), Math.min(limits.maxPickleBytes(), Integer.MAX_VALUE - 8));
        long pklOffset = zip.dataOffset(pkl);
        ByteBuffer pickle = ZipDirectory.readAt(ch, pklOffset, (int) pkl.size());
        Unpickler vm = new Unpickler(limits);
        Object root = vm.load(MemorySegment.ofBuffer(pickle), 0, pkl.size());

        boolean bigEndian = false;
        var order = zip.record(prefix + "/byteorder");
        if (order.isPresent()) {
            ZipDirectory.Record r = order.get();
            if (r.size() > 16) throw new MalformedFileException("byteorder record of " + r.size() + " bytes");
            ByteBuffer b = ZipDirectory.readAt(ch, zip.dataOffset(r), (int) r.size());
            String s = StandardCharsets.US_ASCII.decode(b).toString().trim();
            bigEndian = switch (s) {
                case "little" -> false;
                case "big" -> true;
                default -> throw new MalformedFileException("byteorder record says '" + s + "', not little or big");
            };
        }

        Checkpoint cp = Checkpoint.walk(root, limits, Checkpoint.budget(vm.totalValues, limits));
        Map<String, Long> storageOffsets = new HashMap<>();
        PthReader.StorageOffsets storages = f -> storageOffsets.computeIfAbsent(f.tensor().storage().key(), key -> {
            PyValue.Storage s = f.tensor().storage();
            String recordName = prefix + "/data/" + key;
            long bytes = s.dtype().byteSize(s.numel());
            var rec = zip.record(recordName);
            if (rec.isEmpty()) {
                if (bytes != 0) throw MalformedFileException.inTensor(f.name(), "its storage record " + recordName + " is missing");
                return 0L;
            }
            ZipDirectory.Record r = rec.get();
            if (r.size() < bytes) {
                throw MalformedFileException.inTensor(f.name(), "storage record " + recordName + " holds " + r.size()
                        + " bytes, the pickle declares " + s.numel() + " x " + s.dtype() + " = " + bytes);
            }
            return zip.dataOffset(r);
        });

        Map<String, String> props = new LinkedHashMap<>();
        props.put("layout", "zip");
        props.put("record prefix", prefix);
        props.put("byte order", bigEndian ? "big-endian (swapped when read)" : "little-endian");
        props.put("records", Integer.toString(zip.records.size()));
        return PthReader.archive(path, ch, size, vm, cp, storages, bigEndian, props, limits);
    }
}
