package io.anamnesis.format.npz;

import io.anamnesis.api.StoredRegion;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.TensorIOException;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import io.anamnesis.api.read.ArchiveFile;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.zip.CRC32;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/** An opened .npz (one array per ZIP member) or bare .npy (one array named {@code array}). */
final class NpzArchive implements TensorArchive {

    /**
     * One array: where its member's bytes are and how they are stored.
     *
     * @param entry          the tensor as exposed
     * @param header         its NPY header
     * @param start          file offset of the member's (possibly compressed) bytes
     * @param storedBytes    bytes of the member in the file
     * @param deflated       true for a DEFLATE member
     * @param inflatedBytes  the member's uncompressed size
     * @param crc            the CRC-32 the ZIP directory declares (deflated members are checked)
     */
    record Member(TensorEntry entry, NpyHeader header, long start, long storedBytes, boolean deflated,
                  long inflatedBytes, long crc) {
    }

    private final Path path;
    private final ArchiveFile file;
    private final String kind;
    private final List<Member> members;
    private final Map<String, Member> byName = new HashMap<>();
    private final Map<String, String> properties;

    NpzArchive(Path path, FileChannel channel, String kind, List<Member> members, Map<String, String> properties) {
        this.path = path;
        this.file = ArchiveFile.of(path, channel);
        this.kind = kind;
        this.members = List.copyOf(members);
        for (Member m : members) byName.put(m.entry().name(), m);
        this.properties = properties;
    }

    @Override
    public String format() {
        return "npz";
    }

    @Override
    public Optional<Path> path() {
        return Optional.ofNullable(path);
    }

    @Override
    public Map<String, String> metadata() {
        return Map.of();
    }

    @Override
    public Map<String, String> properties() {
        return properties;
    }

    @Override
    public List<TensorEntry> tensors() {
        return members.stream().map(Member::entry).toList();
    }

    @Override
    public Optional<TensorEntry> tensor(String name) {
        return Optional.ofNullable(byName.get(name)).map(Member::entry);
    }

    @Override
    public MemorySegment data(TensorEntry entry, Arena arena) {
        Member m = byName.get(entry.name());
        if (m == null || !m.entry().equals(entry)) throw new IllegalArgumentException("not a tensor of this archive: " + entry.name());
        MemorySegment raw;
        try {
            if (m.deflated()) {
                MemorySegment member = inflate(m, arena);
                raw = member.asSlice(m.header().dataOffset(), m.header().dataBytes());
            } else {
                if (m.header().dataBytes() == 0) return arena.allocate(1).asSlice(0, 0);
                raw = file.map(m.start() + m.header().dataOffset(),
                        m.header().dataBytes(), arena);
            }
        } catch (IOException e) {
            // no path: the archive was read by range requests, and the message says so
            throw new TensorIOException("cannot read array '" + entry.name() + "'"
                    + (path == null ? "" : " of " + path) + ": " + ArchiveFile.describe(e), e);
        }
        return NpyLayout.toRowMajorLittleEndian(raw, m.header(), arena).asReadOnly();
    }

    @Override
    public Optional<StoredRegion> storedRegion(TensorEntry entry) {
        Member m = byName.get(entry.name());
        if (path == null || file.isClosed() || m == null || !m.entry().equals(entry) || m.deflated() || m.header().dataBytes() == 0
                || m.header().dataBytes() != entry.byteSize() || !NpyLayout.isRowMajorLittleEndian(m.header())) {
            return Optional.empty();
        }
        return Optional.of(new StoredRegion(file.channel(), m.start() + m.header().dataOffset()));
    }

    /** Inflates a whole DEFLATE member into the arena; sizes were bounded when the archive was opened. */
    private MemorySegment inflate(Member m, Arena arena) throws IOException {
        MemorySegment compressed = file.map(m.start(), m.storedBytes(), arena);
        MemorySegment out = arena.allocate(Math.max(1, m.inflatedBytes()), 8).asSlice(0, m.inflatedBytes());
        Inflater inflater = new Inflater(true);
        try {
            inflater.setInput(compressed.asByteBuffer());
            ByteBuffer dst = out.asByteBuffer();
            while (dst.hasRemaining() && !inflater.finished()) {
                int n = inflater.inflate(dst);
                if (n == 0 && (inflater.needsInput() || inflater.needsDictionary())) break;
            }
            // One more byte of room would show a stream longer than the directory says.
            if (!inflater.finished() || dst.hasRemaining()) {
                throw MalformedFileException.inTensor(m.entry().name(), "DEFLATE data does not inflate to the "
                        + m.inflatedBytes() + " bytes the ZIP directory declares");
            }
        } catch (DataFormatException e) {
            throw MalformedFileException.inTensor(m.entry().name(), "corrupt DEFLATE data: " + e.getMessage());
        } finally {
            inflater.end();
        }
        CRC32 crc = new CRC32();
        crc.update(out.asByteBuffer());
        if (crc.getValue() != m.crc()) throw MalformedFileException.inTensor(m.entry().name(), "CRC-32 mismatch");
        return out;
    }

    @Override
    public void close() {
        try {
            file.close();
        } catch (IOException ignored) {
            // nothing useful to do with a failed close of a read-only file
        }
    }
}
