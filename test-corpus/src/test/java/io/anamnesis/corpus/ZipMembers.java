package io.anamnesis.corpus;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;
import java.util.zip.ZipOutputStream;

/**
 * Mutants of what a ZIP archive holds (an .npz's NPY members, a torch checkpoint's
 * {@code data.pkl}): each member is mutated like a file of its own and the archive is
 * written again with correct sizes and CRCs, so a deflated member's edited header, or a
 * pickle string that changed length, reaches the member's parser instead of failing the
 * ZIP layer's checks.
 */
final class ZipMembers {
    private ZipMembers() {
    }

    record Member(String name, int method, byte[] bytes) {
    }

    /**
     * The members in order, from the central directory (torch writes STORED members with
     * data descriptors, which {@code ZipInputStream} refuses), or empty when it cannot be followed.
     */
    static List<Member> read(byte[] zip) {
        List<Member> out = new ArrayList<>();
        try {
            int eocd = -1;
            for (int p = zip.length - 22; p >= Math.max(0, zip.length - 22 - 65535); p--) {
                if (FileAnatomy.startsWith(zip, p, (byte) 'P', (byte) 'K', (byte) 5, (byte) 6)) {
                    eocd = p;
                    break;
                }
            }
            if (eocd < 0) return List.of();
            int entries = (int) FileAnatomy.le(zip, eocd + 10, 2);
            int p = (int) FileAnatomy.le(zip, eocd + 16, 4);
            // an archive behind a prefix (or a ZIP64 one) is left to the byte-level mutants
            for (int i = 0; i < entries; i++) {
                if (!FileAnatomy.startsWith(zip, p, (byte) 'P', (byte) 'K', (byte) 1, (byte) 2)) return List.of();
                int method = (int) FileAnatomy.le(zip, p + 10, 2);
                int csize = (int) FileAnatomy.le(zip, p + 20, 4);
                int usize = (int) FileAnatomy.le(zip, p + 24, 4);
                int nameLen = (int) FileAnatomy.le(zip, p + 28, 2);
                int extraLen = (int) FileAnatomy.le(zip, p + 30, 2);
                int commentLen = (int) FileAnatomy.le(zip, p + 32, 2);
                int local = (int) FileAnatomy.le(zip, p + 42, 4);
                String name = new String(zip, p + 46, nameLen, StandardCharsets.UTF_8);
                p += 46 + nameLen + extraLen + commentLen;
                if (csize < 0 || usize < 0 || usize > 64 << 20) return List.of();
                int data = local + 30 + (int) FileAnatomy.le(zip, local + 26, 2) + (int) FileAnatomy.le(zip, local + 28, 2);
                byte[] raw = Arrays.copyOfRange(zip, data, data + csize);
                byte[] bytes;
                if (method == 0) {
                    bytes = raw;
                } else if (method == 8) {
                    Inflater inflater = new Inflater(true);
                    inflater.setInput(raw);
                    bytes = new byte[usize];
                    int got = 0;
                    while (got < usize && !inflater.finished()) {
                        int k = inflater.inflate(bytes, got, usize - got);
                        if (k == 0 && (inflater.needsInput() || inflater.needsDictionary())) break;
                        got += k;
                    }
                    inflater.end();
                    if (got != usize) return List.of();
                } else {
                    return List.of();
                }
                if (!name.endsWith("/")) out.add(new Member(name, method, bytes));
            }
        } catch (RuntimeException | DataFormatException e) {
            return List.of();
        }
        return out;
    }

    static byte[] write(List<Member> members) {
        try {
            var bytes = new ByteArrayOutputStream();
            try (var out = new ZipOutputStream(bytes)) {
                for (Member m : members) {
                    ZipEntry e = new ZipEntry(m.name());
                    e.setMethod(m.method() == ZipEntry.STORED ? ZipEntry.STORED : ZipEntry.DEFLATED);
                    if (m.method() == ZipEntry.STORED) {
                        CRC32 crc = new CRC32();
                        crc.update(m.bytes());
                        e.setCrc(crc.getValue());
                        e.setSize(m.bytes().length);
                        e.setCompressedSize(m.bytes().length);
                    }
                    out.putNextEntry(e);
                    out.write(m.bytes());
                    out.closeEntry();
                }
            }
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Up to {@code perMember} mutants of each NPY and pickle member (at most {@code maxMembers}
     * of them), each wrapped back into a well-formed archive.
     */
    static List<Mutations.Mutant> of(String seed, byte[] zip, int perMember, int maxMembers) {
        if (FileAnatomy.indexOf(zip, 0, "PK\3\4") < 0) return List.of();
        List<Member> members = read(zip);
        List<Mutations.Mutant> out = new ArrayList<>();
        int used = 0;
        for (int i = 0; i < members.size() && used < maxMembers; i++) {
            Member m = members.get(i);
            if (!m.name().endsWith(".npy") && !m.name().endsWith(".pkl")) continue;
            used++;
            int at = i;
            String shortName = m.name().substring(m.name().lastIndexOf('/') + 1);
            for (Mutations.Mutant inner : Mutations.of(seed + "!" + m.name(), m.bytes(), perMember)) {
                out.add(new Mutations.Mutant("zip[" + shortName + "]:" + inner.id(), original -> {
                    List<Member> edited = new ArrayList<>(members);
                    edited.set(at, new Member(m.name(), m.method(), inner.make().apply(m.bytes())));
                    return write(edited);
                }));
            }
        }
        return out;
    }
}
