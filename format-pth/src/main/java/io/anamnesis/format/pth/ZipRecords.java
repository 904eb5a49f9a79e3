package io.anamnesis.format.pth;

import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.UnsupportedFeatureException;
import org.apache.commons.compress.archivers.zip.ZipArchiveEntry;
import org.apache.commons.compress.archivers.zip.ZipFile;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The records of a torch.save zip, read by commons-compress's {@link ZipFile} (end records,
 * ZIP64, central directory), then checked for what torch.save does not write: records on
 * another disk, two records of one name, records that overlap or run past the file (one
 * file standing for many times its size). For each record the checkpoint uses it also
 * refuses encryption, compression and a local header that disagrees with the directory,
 * and asks commons-compress for the data offset, which it checks to end before the central
 * directory. Refused, not guessed.
 *
 * <p>Why commons-compress and not a directory parser of our own: format-npz reads its zips
 * with it (one zip reader for both), and it gives a record's data offset, so STORED tensors
 * are still mapped in place. Measured against the parser it replaced
 * (docs/benchmarks/format-pth.md): the same bytes read, about 1 ms more per warm open, and a
 * first open per process that loads ~330 more classes: {@code amn inspect} of a .pth took
 * 0.15 s more CPU on a loaded machine (0.06 s with an AOT cache trained on a zip input), the
 * cost an .npz already had. Kept for one reader; an AOT cache trained on a zip wins most of it back.
 *
 * <p>commons-compress reads the directory only (not every local header: many directory
 * entries could name one local header with a 64 KiB extra field), through
 * {@link DirectoryChannel}: an I/O failure reaches the caller as a {@link TensorIOException};
 * what it reads is charged against {@link ParseLimits#maxHeaderBytes()} as it reads (it never
 * trusts a declared size or count, and allocates in proportion to what it has read); so every
 * {@link IOException} it throws is about the zip's structure, a {@link MalformedFileException}
 * with its own sentence, not the wrapper that names its channel's class.
 */
final class ZipRecords implements AutoCloseable {
    private static final int LOCAL_SIG = 0x04034b50;
    /** Bytes the end-record search may read besides the directory: 4 per candidate position of a 64 KiB comment. */
    private static final long END_SEARCH_BYTES = 4L * (22 + 0xFFFF);

    private final FileChannel channel;
    private final long fileSize;
    private final ZipFile zip;
    private final Map<String, ZipArchiveEntry> records;

    private ZipRecords(FileChannel channel, long fileSize, ZipFile zip, Map<String, ZipArchiveEntry> records) {
        this.channel = channel;
        this.fileSize = fileSize;
        this.zip = zip;
        this.records = records;
    }

    /** Reads and checks the directory; the result is closed once the records it names are placed. */
    static ZipRecords read(FileChannel ch, long fileSize, ParseLimits limits) {
        long budget = limits.maxHeaderBytes() > Long.MAX_VALUE - END_SEARCH_BYTES ? Long.MAX_VALUE : limits.maxHeaderBytes() + END_SEARCH_BYTES;
        ZipFile zip;
        try {
            zip = ZipFile.builder()
                    .setSeekableByteChannel(new DirectoryChannel(ch, budget))
                    .setCharset(StandardCharsets.ISO_8859_1) // names without the UTF-8 flag, as APPNOTE 4.4.4 (torch writes ASCII)
                    .setUseUnicodeExtraFields(false) // a name is what the directory says, not an extra field's rewrite
                    .setIgnoreLocalFileHeader(true)
                    .get();
        } catch (IOException | RuntimeException e) {
            throw malformed(e);
        }
        boolean ok = false;
        try {
            ZipRecords r = new ZipRecords(ch, fileSize, zip, checked(Collections.list(zip.getEntries()), fileSize));
            ok = true;
            return r;
        } finally {
            if (!ok) ZipFile.closeQuietly(zip);
        }
    }

    private static Map<String, ZipArchiveEntry> checked(List<ZipArchiveEntry> entries, long fileSize) {
        Map<String, ZipArchiveEntry> records = new LinkedHashMap<>();
        for (ZipArchiveEntry e : entries) {
            if (e.getDiskNumberStart() != 0) throw new UnsupportedFeatureException("multi-disk zip archives");
            if (e.getCompressedSize() > fileSize || minEnd(e) > fileSize) {
                throw new MalformedFileException("zip record " + e.getName() + " lies outside the file: the archive is truncated or corrupt");
            }
            if (records.put(e.getName(), e) != null) throw new MalformedFileException("zip holds two records named " + e.getName());
        }
        // Records must not overlap: otherwise many records could name the same bytes and one
        // file would stand for many times its size (the overlapping-entry zip bomb).
        List<ZipArchiveEntry> byOffset = new ArrayList<>(entries);
        byOffset.sort((a, b) -> Long.compare(a.getLocalHeaderOffset(), b.getLocalHeaderOffset())); // ours: from the AOT cache
        for (int i = 0; i + 1 < byOffset.size(); i++) {
            ZipArchiveEntry r = byOffset.get(i);
            ZipArchiveEntry next = byOffset.get(i + 1);
            if (minEnd(r) > next.getLocalHeaderOffset()) {
                throw new MalformedFileException("zip records " + r.getName() + " and " + next.getName() + " overlap");
            }
        }
        return records;
    }

    /** Where a record's bytes end at the earliest: a local header as long as the directory's name, no extra field. */
    private static long minEnd(ZipArchiveEntry e) {
        return e.getLocalHeaderOffset() + 30 + e.getRawName().length + e.getCompressedSize();
    }

    /** An exception of commons-compress, typed (our own, from {@link DirectoryChannel}, pass through). */
    private static RuntimeException malformed(Exception e) {
        if (e instanceof AnamnesisException a) return a;
        if (e instanceof IOException io) return new MalformedFileException("the zip archive is truncated or corrupt: " + complaint(io), e);
        return new MalformedFileException("the zip archive is truncated or corrupt: its directory cannot be read", e);
    }

    /**
     * commons-compress's own sentence about the zip (it wraps it in one naming its channel's
     * class): the innermost {@link IOException} of the chain.
     */
    private static String complaint(IOException e) {
        Throwable t = e;
        while (t.getCause() instanceof IOException inner) t = inner;
        return t instanceof EOFException || t.getMessage() == null ? "its directory ends early" : t.getMessage();
    }

    Optional<ZipArchiveEntry> record(String name) {
        return Optional.ofNullable(records.get(name));
    }

    /** Every record, in directory order. */
    List<ZipArchiveEntry> all() {
        return List.copyOf(records.values());
    }

    int count() {
        return records.size();
    }

    /**
     * The absolute offset of a STORED record's bytes, after checking that its local header is
     * one and names the same record as the directory.
     */
    long dataOffset(ZipArchiveEntry r) {
        checkStored(r);
        byte[] name = r.getRawName();
        ByteBuffer h = PthReader.readAt(channel, r.getLocalHeaderOffset(), 30 + name.length);
        if (h.getInt(0) != LOCAL_SIG) throw new MalformedFileException("zip record " + r.getName() + " has no local header");
        byte[] local = new byte[name.length];
        h.get(30, local);
        if ((h.getShort(26) & 0xFFFF) != name.length || !Arrays.equals(local, name)) {
            throw new MalformedFileException("zip local header of " + r.getName() + " names another record");
        }
        try {
            // the raw stream is not read: opening it makes commons-compress find the data
            // offset from the local header and check that the data ends before the directory
            zip.getRawInputStream(r);
        } catch (IOException | RuntimeException e) {
            throw malformed(e);
        }
        long data = r.getDataOffset();
        if (data < 0 || data > fileSize || r.getSize() > fileSize - data) {
            throw new MalformedFileException("zip record " + r.getName() + " runs past the end of the file: the archive is truncated");
        }
        return data;
    }

    /**
     * Where a STORED record's bytes start at the earliest, from the directory alone: after a
     * local header as long as the directory's name, with no extra field. For an archive whose
     * tensor data is never read (headers read by range requests), where reading every
     * storage's local header would cost a request per storage.
     */
    long dataOffsetFromDirectory(ZipArchiveEntry r) {
        checkStored(r);
        return r.getLocalHeaderOffset() + 30 + r.getRawName().length;
    }

    private static void checkStored(ZipArchiveEntry r) {
        if (r.getGeneralPurposeBit().usesEncryption()) throw new UnsupportedFeatureException("encrypted zip record " + r.getName());
        if (r.getMethod() != ZipArchiveEntry.STORED) {
            throw new UnsupportedFeatureException("zip record " + r.getName() + " is compressed (method " + r.getMethod()
                    + "); torch.save writes STORED records, and tensors are read in place");
        }
        if (r.getCompressedSize() != r.getSize()) throw new MalformedFileException("STORED zip record " + r.getName() + " has two different sizes");
    }

    @Override
    public void close() {
        ZipFile.closeQuietly(zip);
    }

    /**
     * The checkpoint's channel as commons-compress reads it: at its own position (the file's
     * is left alone), never closed by it, charged against a byte budget, and with I/O failures
     * turned into {@link TensorIOException} so that they are not taken for a corrupt zip.
     */
    private static final class DirectoryChannel implements SeekableByteChannel {
        private final FileChannel file;
        private final long budget;
        private long position;
        private long read;
        private boolean open = true;

        DirectoryChannel(FileChannel file, long budget) {
            this.file = file;
            this.budget = budget;
        }

        @Override
        public int read(ByteBuffer dst) {
            try {
                int n = file.read(dst, position);
                if (n > 0) {
                    position += n;
                    read += n;
                    if (read > budget) {
                        throw new LimitExceededException("the zip directory is over the limit of " + budget + " bytes");
                    }
                }
                return n;
            } catch (IOException e) {
                throw new TensorIOException("cannot read the zip directory: " + e.getMessage(), e);
            }
        }

        @Override
        public long position() {
            return position;
        }

        @Override
        public SeekableByteChannel position(long newPosition) {
            if (newPosition < 0) throw new MalformedFileException("the zip directory points before the start of the file");
            position = newPosition;
            return this;
        }

        @Override
        public long size() {
            try {
                return file.size();
            } catch (IOException e) {
                throw new TensorIOException("cannot read the zip directory: " + e.getMessage(), e);
            }
        }

        @Override
        public int write(ByteBuffer src) {
            throw new NonWritableChannelException();
        }

        @Override
        public SeekableByteChannel truncate(long size) {
            throw new NonWritableChannelException();
        }

        @Override
        public boolean isOpen() {
            return open;
        }

        @Override
        public void close() {
            open = false; // the checkpoint's channel stays open: the archive maps tensors from it
        }
    }
}
