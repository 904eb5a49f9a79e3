package io.anamnesis.format.pth;

import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.UnsupportedFeatureException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A strict reader of a ZIP's central directory (PKWARE APPNOTE 4.3.12-4.3.16, ZIP64 4.3.14
 * and 4.5.3), reading only the end records, the directory and, on demand, one local header
 * per record. That is all {@code inspect} needs, and it gives every STORED record's absolute
 * data offset so tensors can be memory-mapped in place. Anything torch.save does not write
 * (multi-disk, encryption, overlapping or out-of-file records) is refused rather than guessed.
 */
final class ZipDirectory {
    /** One record: its name, compression method, sizes and where its local header starts. */
    record Record(String name, int nameBytes, int method, int flags, long compressedSize, long size, long localHeaderOffset) {
    }

    private static final int EOCD_SIG = 0x06054b50;
    private static final int ZIP64_LOCATOR_SIG = 0x07064b50;
    private static final int ZIP64_EOCD_SIG = 0x06064b50;
    private static final int CENTRAL_SIG = 0x02014b50;
    private static final int LOCAL_SIG = 0x04034b50;
    private static final long U32 = 0xFFFF_FFFFL;

    private final FileChannel channel;
    private final long fileSize;
    private final long directoryOffset;
    final Map<String, Record> records;

    private ZipDirectory(FileChannel channel, long fileSize, long directoryOffset, Map<String, Record> records) {
        this.channel = channel;
        this.fileSize = fileSize;
        this.directoryOffset = directoryOffset;
        this.records = records;
    }

    static ZipDirectory read(FileChannel ch, long fileSize, ParseLimits limits) {
        // The end record is 22 bytes plus a comment of up to 64 KiB; torch writes none, so a
        // small window almost always suffices and the full one is read only when it does not.
        int tailLen = (int) Math.min(fileSize, 1024);
        ByteBuffer tail = readAt(ch, fileSize - tailLen, tailLen);
        int eocd = findEnd(tail, tailLen);
        if (eocd < 0 && tailLen < Math.min(fileSize, 22 + 0xFFFF)) {
            tailLen = (int) Math.min(fileSize, 22 + 0xFFFF);
            tail = readAt(ch, fileSize - tailLen, tailLen);
            eocd = findEnd(tail, tailLen);
        }
        if (eocd < 0) throw new MalformedFileException("zip end-of-central-directory record not found: the archive is truncated or not a zip");
        long eocdPos = fileSize - tailLen + eocd;
        int disk = tail.getShort(eocd + 4) & 0xFFFF;
        int cdDisk = tail.getShort(eocd + 6) & 0xFFFF;
        long entries = tail.getShort(eocd + 10) & 0xFFFF;
        long cdSize = tail.getInt(eocd + 12) & U32;
        long cdOffset = tail.getInt(eocd + 16) & U32;
        long cdEnd = eocdPos;
        if (entries == 0xFFFF || cdSize == U32 || cdOffset == U32) {
            if (eocd < 20 || tail.getInt(eocd - 20) != ZIP64_LOCATOR_SIG) {
                throw new MalformedFileException("zip declares ZIP64 sizes but has no ZIP64 locator");
            }
            long z64 = tail.getLong(eocd - 20 + 8);
            if (z64 < 0 || z64 > eocdPos - 20 - 56) throw new MalformedFileException("ZIP64 end record offset " + z64 + " is outside the file");
            ByteBuffer r = readAt(ch, z64, 56);
            if (r.getInt(0) != ZIP64_EOCD_SIG) throw new MalformedFileException("ZIP64 end record signature missing");
            disk = r.getInt(16);
            cdDisk = r.getInt(20);
            entries = r.getLong(32);
            cdSize = r.getLong(40);
            cdOffset = r.getLong(48);
            cdEnd = z64;
        }
        if (disk != 0 || cdDisk != 0) throw new UnsupportedFeatureException("multi-disk zip archives");
        if (cdSize < 0 || cdOffset < 0 || cdOffset > cdEnd || cdSize > cdEnd - cdOffset) {
            throw new MalformedFileException("zip central directory (offset " + cdOffset + ", " + cdSize
                    + " bytes) lies outside the file: the archive is truncated or corrupt");
        }
        ParseLimits.check("zip central directory bytes", cdSize, Math.min(limits.maxHeaderBytes(), Integer.MAX_VALUE - 8));
        if (entries < 0 || entries > cdSize / 46) {
            throw new MalformedFileException("zip declares " + entries + " records in a " + cdSize + "-byte directory");
        }
        ByteBuffer cd = readAt(ch, cdOffset, (int) cdSize);
        Map<String, Record> records = new LinkedHashMap<>();
        int p = 0;
        for (long n = 0; n < entries; n++) {
            if (p + 46 > cdSize || cd.getInt(p) != CENTRAL_SIG) throw new MalformedFileException("zip central directory entry " + n + " is corrupt");
            int flags = cd.getShort(p + 8) & 0xFFFF;
            int method = cd.getShort(p + 10) & 0xFFFF;
            long csize = cd.getInt(p + 20) & U32;
            long usize = cd.getInt(p + 24) & U32;
            int nameLen = cd.getShort(p + 28) & 0xFFFF;
            int extraLen = cd.getShort(p + 30) & 0xFFFF;
            int commentLen = cd.getShort(p + 32) & 0xFFFF;
            long local = cd.getInt(p + 42) & U32;
            if ((long) p + 46 + nameLen + extraLen + commentLen > cdSize) {
                throw new MalformedFileException("zip central directory entry " + n + " runs past the directory");
            }
            byte[] nameBytes = new byte[nameLen];
            cd.get(p + 46, nameBytes);
            String name = new String(nameBytes, (flags & 0x800) != 0 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
            // ZIP64 extended information: only the fields whose 32-bit slot is all ones, in this order.
            int e = p + 46 + nameLen;
            int eEnd = e + extraLen;
            while (e + 4 <= eEnd) {
                int id = cd.getShort(e) & 0xFFFF;
                int len = cd.getShort(e + 2) & 0xFFFF;
                if (e + 4 + len > eEnd) throw new MalformedFileException("zip extra field of " + name + " is corrupt");
                if (id == 0x0001) {
                    int q = e + 4;
                    if (usize == U32) { usize = z64(cd, q, e + 4 + len, name); q += 8; }
                    if (csize == U32) { csize = z64(cd, q, e + 4 + len, name); q += 8; }
                    if (local == U32) { local = z64(cd, q, e + 4 + len, name); }
                }
                e += 4 + len;
            }
            if (csize < 0 || usize < 0 || local < 0 || local > cdOffset || csize > cdOffset - local) {
                throw new MalformedFileException("zip record " + name + " lies outside the file: the archive is truncated or corrupt");
            }
            if (records.put(name, new Record(name, nameLen, method, flags, csize, usize, local)) != null) {
                throw new MalformedFileException("zip holds two records named " + name);
            }
            p += 46 + nameLen + extraLen + commentLen;
        }
        // Records must not overlap: otherwise many records could name the same bytes and one
        // file would stand for many times its size (the overlapping-entry zip bomb).
        List<Record> byOffset = new ArrayList<>(records.values());
        byOffset.sort(java.util.Comparator.comparingLong(Record::localHeaderOffset));
        for (int i = 0; i + 1 < byOffset.size(); i++) {
            Record r = byOffset.get(i);
            Record next = byOffset.get(i + 1);
            long minEnd = r.localHeaderOffset() + 30 + r.nameBytes() + r.compressedSize();
            if (minEnd > next.localHeaderOffset()) {
                throw new MalformedFileException("zip records " + r.name() + " and " + next.name() + " overlap");
            }
        }
        return new ZipDirectory(ch, fileSize, cdOffset, records);
    }

    /** The last end-record signature whose comment runs exactly to the end of the window, or -1. */
    private static int findEnd(ByteBuffer tail, int tailLen) {
        for (int i = tailLen - 22; i >= 0; i--) {
            if (tail.getInt(i) == EOCD_SIG && i + 22 + (tail.getShort(i + 20) & 0xFFFF) == tailLen) return i;
        }
        return -1;
    }

    private static long z64(ByteBuffer cd, int q, int end, String name) {
        if (q + 8 > end) throw new MalformedFileException("ZIP64 extra field of " + name + " is too short");
        long v = cd.getLong(q);
        if (v < 0) throw new LimitExceededException("zip record " + name + " declares a size beyond 2^63");
        return v;
    }

    Optional<Record> record(String name) {
        return Optional.ofNullable(records.get(name));
    }

    /**
     * The absolute offset of a STORED record's bytes, from its local header (whose name must
     * match the directory's), checked to end before the central directory.
     */
    long dataOffset(Record r) {
        if ((r.flags() & 0x1) != 0) throw new UnsupportedFeatureException("encrypted zip record " + r.name());
        if (r.method() != 0) {
            throw new UnsupportedFeatureException("zip record " + r.name() + " is compressed (method " + r.method()
                    + "); torch.save writes STORED records, and tensors are read in place");
        }
        if (r.compressedSize() != r.size()) throw new MalformedFileException("STORED zip record " + r.name() + " has two different sizes");
        if (r.localHeaderOffset() > fileSize - 30) throw new MalformedFileException("local header of " + r.name() + " is outside the file");
        ByteBuffer h = readAt(channel, r.localHeaderOffset(), 30);
        if (h.getInt(0) != LOCAL_SIG) throw new MalformedFileException("zip record " + r.name() + " has no local header");
        int nameLen = h.getShort(26) & 0xFFFF;
        int extraLen = h.getShort(28) & 0xFFFF;
        long data = r.localHeaderOffset() + 30 + nameLen + extraLen;
        if (data > directoryOffset || r.size() > directoryOffset - data) {
            throw new MalformedFileException("zip record " + r.name() + " runs into the central directory: the archive is corrupt");
        }
        ByteBuffer nb = readAt(channel, r.localHeaderOffset() + 30, nameLen);
        byte[] name = new byte[nameLen];
        nb.get(0, name);
        String local = new String(name, (r.flags() & 0x800) != 0 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
        if (!local.equals(r.name())) {
            throw new MalformedFileException("zip local header names " + local + " where the directory says " + r.name());
        }
        return data;
    }

    /** Reads exactly {@code len} bytes at {@code pos}, little-endian. */
    static ByteBuffer readAt(FileChannel ch, long pos, int len) {
        ByteBuffer b = ByteBuffer.allocate(len).order(ByteOrder.LITTLE_ENDIAN);
        try {
            while (b.hasRemaining()) {
                int n = ch.read(b, pos + b.position());
                if (n < 0) throw new MalformedFileException("file ends at " + (pos + b.position()) + ", " + b.remaining() + " bytes early");
            }
        } catch (IOException e) {
            throw new TensorIOException("cannot read: " + e.getMessage(), e);
        }
        return b.flip().order(ByteOrder.LITTLE_ENDIAN);
    }

    List<String> names() {
        return new ArrayList<>(records.keySet());
    }
}
