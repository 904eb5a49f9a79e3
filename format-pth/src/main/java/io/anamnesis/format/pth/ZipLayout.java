package io.anamnesis.format.pth;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import org.apache.commons.compress.archivers.zip.ZipArchiveEntry;

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
 * whose bytes are mapped in place. Reads the zip's directory ({@link ZipRecords}), one local
 * header per record used, {@code data.pkl} and {@code byteorder}; never tensor bytes.
 */
final class ZipLayout {
    private ZipLayout() {
    }

    /**
     * @param headersOnly the archive's data will never be read (headers read by range
     *                    requests): storages are placed from the directory, their local
     *                    headers unread
     */
    static PthArchive read(Path path, FileChannel ch, long size, ParseLimits limits, boolean headersOnly) {
        try (ZipRecords zip = ZipRecords.read(ch, size, limits)) {
            return read(path, ch, size, zip, limits, headersOnly);
        }
    }

    private static PthArchive read(Path path, FileChannel ch, long size, ZipRecords zip, ParseLimits limits,
                                   boolean headersOnly) {
        ZipArchiveEntry pkl = null;
        for (ZipArchiveEntry r : zip.all()) {
            String n = r.getName();
            if (n.endsWith("/data.pkl") && n.indexOf('/') == n.length() - "/data.pkl".length()) {
                if (pkl != null) throw new MalformedFileException("zip holds two checkpoints: " + pkl.getName() + " and " + n);
                pkl = r;
            }
        }
        if (pkl == null) throw new MalformedFileException("zip has no <prefix>/data.pkl record: not a torch.save checkpoint");
        String prefix = pkl.getName().substring(0, pkl.getName().length() - "/data.pkl".length());
        // Read into one heap buffer, so also capped by what a Java array holds.
        ParseLimits.check("data.pkl bytes", pkl.getSize(), Math.min(limits.maxPickleBytes(), Integer.MAX_VALUE - 8));
        long pklOffset = zip.dataOffset(pkl);
        ByteBuffer pickle = PthReader.readAt(ch, pklOffset, (int) pkl.getSize());
        Unpickler vm = new Unpickler(limits);
        Object root = vm.load(MemorySegment.ofBuffer(pickle), 0, pkl.getSize());

        boolean bigEndian = false;
        var order = zip.record(prefix + "/byteorder");
        if (order.isPresent()) {
            ZipArchiveEntry r = order.get();
            if (r.getSize() > 16) throw new MalformedFileException("byteorder record of " + r.getSize() + " bytes");
            ByteBuffer b = PthReader.readAt(ch, zip.dataOffset(r), (int) r.getSize());
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
            ZipArchiveEntry r = rec.get();
            if (r.getSize() < bytes) {
                throw MalformedFileException.inTensor(f.name(), "storage record " + recordName + " holds " + r.getSize()
                        + " bytes, the pickle declares " + s.numel() + " x " + s.dtype() + " = " + bytes);
            }
            return headersOnly ? zip.dataOffsetFromDirectory(r) : zip.dataOffset(r);
        });

        Map<String, String> props = new LinkedHashMap<>();
        props.put("layout", "zip");
        props.put("record prefix", prefix);
        props.put("byte order", bigEndian ? "big-endian (swapped when read)" : "little-endian");
        props.put("records", Integer.toString(zip.count()));
        return PthReader.archive(path, ch, size, vm, cp, storages, bigEndian, props, limits);
    }
}
