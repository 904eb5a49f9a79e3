package io.anamnesis.corpus;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where a valid file's length, count and offset fields sit, found by walking the container
 * structures this project reads (safetensors, NPY, ZIP, GGUF, pickle), so that hostile
 * mutations hit the bytes a reader trusts instead of landing at random in tensor data.
 * A walk that meets something it does not understand stops quietly: the anatomy is a
 * best effort that only steers mutations, never a parser under test.
 */
final class FileAnatomy {

    /** A ZIP member stored without compression, whose CRC a mutation inside it must repair. */
    record StoredMember(int localHeader, int central, int dataStart, int dataLength) {
        boolean contains(int offset) {
            return offset >= dataStart && offset < dataStart + dataLength;
        }
    }

    /** A little- or big-endian integer field of 1, 2, 4 or 8 bytes. */
    record Field(int offset, int width, boolean bigEndian, String label) {
    }

    /** A text header whose length prefix must follow edits (safetensors JSON, NPY dict). */
    record TextHeader(int lengthOffset, int lengthWidth, int start, int length, String label) {
    }

    final List<Field> fields = new ArrayList<>();
    final TreeSet<Integer> boundaries = new TreeSet<>();
    final List<TextHeader> textHeaders = new ArrayList<>();
    final List<StoredMember> storedMembers = new ArrayList<>();
    /** A GGUF tensor's ne[] fields, fastest first, for shape edits that keep the element count. */
    record Dims(int[] offsets, int width, boolean bigEndian, int typeOffset) {
    }

    final List<Dims> dims = new ArrayList<>();

    /**
     * A pickle string (length-prefixed) or GLOBAL operand (two newline-terminated lines).
     * Recorded only for a pickle that is the whole file, where an edit that changes its
     * length leaves everything else valid: pickles hold no byte offsets.
     */
    record PickleText(int lengthOffset, int width, int start, int length, boolean global) {
    }

    final List<PickleText> pickleTexts = new ArrayList<>();
    private boolean wholeFilePickle;

    static FileAnatomy of(byte[] b) {
        FileAnatomy a = new FileAnatomy();
        try {
            a.walkTop(b);
        } catch (RuntimeException stop) {
            // best effort: keep what was found before the walk got lost
        }
        a.boundaries.removeIf(x -> x < 0 || x > b.length);
        return a;
    }

    private void walkTop(byte[] b) {
        if (startsWith(b, 0, (byte) 0x93, (byte) 'N', (byte) 'U', (byte) 'M', (byte) 'P', (byte) 'Y')) {
            npy(b, 0, b.length, "npy");
        } else if (startsWith(b, 0, (byte) 'G', (byte) 'G', (byte) 'U', (byte) 'F')) {
            gguf(b);
        } else if (b.length >= 2 && (b[0] & 0xFF) == 0x80 && b[1] >= 2 && b[1] <= 5) {
            // legacy torch.save: several pickles back to back, then raw storages
            int p = 0;
            wholeFilePickle = true;
            for (int i = 0; i < 8 && p < b.length && (b[p] & 0xFF) == 0x80; i++) {
                boundaries.add(p);
                p = pickle(b, p, b.length, "pickle" + i);
            }
            boundaries.add(p);
        } else if (indexOf(b, 0, "PK\3\4") >= 0) {
            zip(b);
        } else if (b.length >= 8) {
            safetensors(b);
        }
    }

    // ---------------------------------------------------------------- safetensors

    private void safetensors(byte[] b) {
        long n = le(b, 0, 8);
        fields.add(new Field(0, 8, false, "st.header_len"));
        boundaries.add(8);
        if (n <= 0 || n > b.length - 8) return;
        int start = 8;
        int end = (int) (8 + n);
        boundaries.add(end);
        textHeaders.add(new TextHeader(0, 8, start, (int) n, "st.json"));
        String json = new String(b, start, (int) n, StandardCharsets.ISO_8859_1);
        Matcher m = Pattern.compile("\"data_offsets\"\\s*:\\s*\\[\\s*(\\d+)\\s*,\\s*(\\d+)").matcher(json);
        while (m.find()) {
            boundaries.add(end + (int) Math.min(Integer.MAX_VALUE / 2, Long.parseLong(m.group(1))));
            boundaries.add(end + (int) Math.min(Integer.MAX_VALUE / 2, Long.parseLong(m.group(2))));
        }
    }

    // ---------------------------------------------------------------- npy

    private void npy(byte[] b, int base, int limit, String label) {
        boundaries.add(base + 6);
        boundaries.add(base + 8);
        fields.add(new Field(base + 6, 1, false, label + ".major"));
        int major = b[base + 6] & 0xFF;
        int width = major == 1 ? 2 : 4;
        fields.add(new Field(base + 8, width, false, label + ".header_len"));
        int start = base + 8 + width;
        boundaries.add(start);
        long n = le(b, base + 8, width);
        if (start + n > limit) return;
        textHeaders.add(new TextHeader(base + 8, width, start, (int) n, label + ".dict"));
        boundaries.add((int) (start + n));
    }

    // ---------------------------------------------------------------- zip

    private void zip(byte[] b) {
        List<int[]> locals = new ArrayList<>();
        for (int p = indexOf(b, 0, "PK"); p >= 0 && p + 4 <= b.length; p = indexOf(b, p + 1, "PK")) {
            int kind = ((b[p + 2] & 0xFF) << 8) | (b[p + 3] & 0xFF);
            switch (kind) {
                case 0x0304 -> {
                    if (p + 30 > b.length) continue;
                    boundaries.add(p);
                    boundaries.add(p + 30);
                    f(p + 6, 2, "zip.local.flags");
                    f(p + 8, 2, "zip.local.method");
                    f(p + 14, 4, "zip.local.crc");
                    f(p + 18, 4, "zip.local.csize");
                    f(p + 22, 4, "zip.local.usize");
                    f(p + 26, 2, "zip.local.name_len");
                    f(p + 28, 2, "zip.local.extra_len");
                    int method = (int) le(b, p + 8, 2);
                    int csize = (int) le(b, p + 18, 4);
                    int nameLen = (int) le(b, p + 26, 2);
                    int extraLen = (int) le(b, p + 28, 2);
                    int data = p + 30 + nameLen + extraLen;
                    if (extraLen >= 4) zipExtra(b, p + 30 + nameLen, extraLen, "zip.local.extra");
                    boundaries.add(p + 30 + nameLen);
                    boundaries.add(data);
                    if (csize == -1 || csize == 0xFFFFFFFF) continue;
                    if (data + (long) csize <= b.length) boundaries.add(data + csize);
                    locals.add(new int[]{p, method, data, csize, nameLen});
                }
                case 0x0102 -> {
                    if (p + 46 > b.length) continue;
                    boundaries.add(p);
                    f(p + 10, 2, "zip.central.method");
                    f(p + 16, 4, "zip.central.crc");
                    f(p + 20, 4, "zip.central.csize");
                    f(p + 24, 4, "zip.central.usize");
                    f(p + 28, 2, "zip.central.name_len");
                    f(p + 30, 2, "zip.central.extra_len");
                    f(p + 32, 2, "zip.central.comment_len");
                    f(p + 42, 4, "zip.central.local_offset");
                    int nameLen = (int) le(b, p + 28, 2);
                    int extraLen = (int) le(b, p + 30, 2);
                    if (extraLen >= 4) zipExtra(b, p + 46 + nameLen, extraLen, "zip.central.extra");
                    for (int[] l : locals) {
                        if (l[0] == (int) le(b, p + 42, 4) && l[1] == 0 && l[2] + l[3] <= b.length) {
                            storedMembers.add(new StoredMember(l[0], p, l[2], l[3]));
                        }
                    }
                }
                case 0x0506 -> {
                    if (p + 22 > b.length) continue;
                    boundaries.add(p);
                    f(p + 8, 2, "zip.eocd.disk_entries");
                    f(p + 10, 2, "zip.eocd.entries");
                    f(p + 12, 4, "zip.eocd.cd_size");
                    f(p + 16, 4, "zip.eocd.cd_offset");
                    f(p + 20, 2, "zip.eocd.comment_len");
                }
                case 0x0606 -> {
                    if (p + 56 > b.length) continue;
                    boundaries.add(p);
                    f(p + 4, 8, "zip64.eocd.size");
                    f(p + 24, 8, "zip64.eocd.disk_entries");
                    f(p + 32, 8, "zip64.eocd.entries");
                    f(p + 40, 8, "zip64.eocd.cd_size");
                    f(p + 48, 8, "zip64.eocd.cd_offset");
                }
                case 0x0607 -> {
                    if (p + 20 > b.length) continue;
                    boundaries.add(p);
                    f(p + 8, 8, "zip64.locator.eocd_offset");
                }
                default -> {
                }
            }
        }
        // what the members hold: NPY headers, pickles
        for (int[] l : locals) {
            int p = l[0];
            String name = new String(b, p + 30, Math.min(l[4], b.length - p - 30), StandardCharsets.UTF_8);
            if (l[1] != 0) continue;
            int data = l[2];
            int end = Math.min(b.length, data + l[3]);
            String member = name.substring(name.lastIndexOf('/') + 1);
            if (name.endsWith(".npy") && startsWith(b, data, (byte) 0x93, (byte) 'N')) {
                npy(b, data, end, "npy[" + member + "]");
            } else if (name.endsWith(".pkl") && data < b.length && (b[data] & 0xFF) == 0x80) {
                try {
                    pickle(b, data, end, "pickle[" + member + "]");
                } catch (RuntimeException stop) {
                    // keep the fields found so far
                }
            }
        }
    }

    private void zipExtra(byte[] b, int start, int len, String label) {
        int p = start;
        int end = Math.min(b.length, start + len);
        while (p + 4 <= end) {
            int size = (int) le(b, p + 2, 2);
            f(p + 2, 2, label + ".size");
            if (le(b, p, 2) == 1) {
                for (int q = p + 4; q + 8 <= Math.min(end, p + 4 + size); q += 8) f(q, 8, "zip64.extra.value");
            }
            p += 4 + size;
        }
    }

    // ---------------------------------------------------------------- gguf

    private boolean ggufBigEndian;

    private long g(byte[] b, int p, int w) {
        return ggufBigEndian ? be(b, p, w) : le(b, p, w);
    }

    private void gf(int p, int w, String label) {
        fields.add(new Field(p, w, ggufBigEndian, label));
    }

    private void gguf(byte[] b) {
        long version = le(b, 4, 4);
        if (version > 0xFFFF) ggufBigEndian = true;
        version = g(b, 4, 4);
        gf(4, 4, "gguf.version");
        boundaries.add(4);
        boundaries.add(8);
        int cw = version == 1 ? 4 : 8;
        gf(8, cw, "gguf.tensor_count");
        gf(8 + cw, cw, "gguf.kv_count");
        long tensors = g(b, 8, cw);
        long kvs = g(b, 8 + cw, cw);
        int p = 8 + 2 * cw;
        boundaries.add(p);
        long alignment = 32;
        for (long i = 0; i < kvs && p < b.length; i++) {
            int keyAt = p;
            String key = ggufString(b, p, cw, "gguf.kv.key_len");
            p += cw + (int) g(b, p, cw);
            gf(p, 4, "gguf.kv.type");
            int type = (int) g(b, p, 4);
            p += 4;
            if (key.equals("general.alignment") && type == 4) alignment = g(b, p, 4);
            p = ggufValue(b, p, type, cw, key, 0);
            boundaries.add(keyAt);
            boundaries.add(p);
        }
        List<Long> offsets = new ArrayList<>();
        for (long i = 0; i < tensors && p < b.length; i++) {
            boundaries.add(p);
            gf(p, cw, "gguf.tensor.name_len");
            p += cw + (int) g(b, p, cw);
            gf(p, 4, "gguf.tensor.n_dims");
            int dims = (int) g(b, p, 4);
            p += 4;
            int[] dimOffsets = new int[Math.min(dims, 8)];
            for (int d = 0; d < dims && d < 8; d++) {
                gf(p, cw, "gguf.tensor.dim" + d);
                dimOffsets[d] = p;
                p += cw;
            }
            this.dims.add(new Dims(dimOffsets, cw, ggufBigEndian, p));
            gf(p, 4, "gguf.tensor.type");
            p += 4;
            gf(p, 8, "gguf.tensor.offset");
            offsets.add(g(b, p, 8));
            p += 8;
        }
        boundaries.add(p);
        if (alignment > 0 && alignment < 1 << 20) {
            long data = (p + alignment - 1) / alignment * alignment;
            boundaries.add((int) data);
            for (long o : offsets) if (data + o < b.length) boundaries.add((int) (data + o));
        }
    }

    private String ggufString(byte[] b, int p, int cw, String label) {
        gf(p, cw, label);
        long n = g(b, p, cw);
        if (n < 0 || p + cw + n > b.length) throw new IllegalStateException("lost");
        return new String(b, p + cw, (int) n, StandardCharsets.UTF_8);
    }

    private int ggufValue(byte[] b, int p, int type, int cw, String key, int depth) {
        return switch (type) {
            case 0, 1, 7 -> p + 1;
            case 2, 3 -> p + 2;
            case 4, 5, 6 -> p + 4;
            case 10, 11, 12 -> p + 8;
            case 8 -> {
                ggufString(b, p, cw, "gguf.string_len[" + key + "]");
                yield p + cw + (int) g(b, p, cw);
            }
            case 9 -> {
                if (depth > 2) throw new IllegalStateException("lost");
                gf(p, 4, "gguf.array.type[" + key + "]");
                int et = (int) g(b, p, 4);
                gf(p + 4, cw, "gguf.array.len[" + key + "]");
                long n = g(b, p + 4, cw);
                int q = p + 4 + cw;
                int fixed = switch (et) {
                    case 0, 1, 7 -> 1;
                    case 2, 3 -> 2;
                    case 4, 5, 6 -> 4;
                    case 10, 11, 12 -> 8;
                    default -> -1;
                };
                if (fixed > 0) {
                    if (n < 0 || q + n * fixed > b.length) throw new IllegalStateException("lost");
                    yield q + (int) (n * fixed);
                }
                int before = fields.size();
                for (long i = 0; i < n; i++) {
                    q = ggufValue(b, q, et, cw, key, depth + 1);
                    if (q > b.length) throw new IllegalStateException("lost");
                }
                // keep the fields of the first few elements only: a vocabulary has 50k of them
                while (fields.size() > before + 6) fields.removeLast();
                yield q;
            }
            default -> throw new IllegalStateException("lost");
        };
    }

    // ---------------------------------------------------------------- pickle

    /** Walks one pickle from {@code p}; returns the offset after STOP. */
    private int pickle(byte[] b, int p, int limit, String label) {
        int found = 0;
        while (p < limit) {
            int op = b[p] & 0xFF;
            int arg = p + 1;
            int next;
            switch (op) {
                case 0x80, 'K', 'C', 'U', 'q', 'h', 0x82 -> { // PROTO BININT1 SHORT_BINBYTES SHORT_BINSTRING BINPUT BINGET EXT1
                    if (op == 'K' || op == 'q' || op == 'h') field(arg, 1, label + "." + (char) op, found++);
                    next = arg + 1;
                    if (op == 'C' || op == 'U') {
                        field(arg, 1, label + ".short_len", found++);
                        next += b[arg] & 0xFF;
                    }
                }
                case 0x8c -> { // SHORT_BINUNICODE
                    field(arg, 1, label + ".short_unicode_len", found++);
                    text(new PickleText(arg, 1, arg + 1, b[arg] & 0xFF, false));
                    next = arg + 1 + (b[arg] & 0xFF);
                }
                case 'M', 0x83 -> { // BININT2, EXT2
                    field(arg, 2, label + ".binint2", found++);
                    next = arg + 2;
                }
                case 'J', 'r', 'j', 0x84 -> { // BININT LONG_BINPUT LONG_BINGET EXT4
                    field(arg, 4, label + "." + (op == 'J' ? "binint" : "memo4"), found++);
                    next = arg + 4;
                }
                case 'X', 'B', 'T' -> { // BINUNICODE BINBYTES BINSTRING
                    field(arg, 4, label + ".len4", found++);
                    if (op == 'X') text(new PickleText(arg, 4, arg + 4, (int) le(b, arg, 4), false));
                    next = arg + 4 + (int) le(b, arg, 4);
                }
                case 0x8a -> { // LONG1
                    field(arg, 1, label + ".long1_len", found++);
                    next = arg + 1 + (b[arg] & 0xFF);
                }
                case 0x8b -> { // LONG4
                    field(arg, 4, label + ".long4_len", found++);
                    next = arg + 4 + (int) le(b, arg, 4);
                }
                case 0x95 -> { // FRAME
                    field(arg, 8, label + ".frame_len", found++);
                    next = arg + 8;
                }
                case 0x8d, 0x8e, 0x96 -> { // BINUNICODE8 BINBYTES8 BYTEARRAY8
                    field(arg, 8, label + ".len8", found++);
                    next = arg + 8 + (int) le(b, arg, 8);
                }
                case 'G' -> next = arg + 8; // BINFLOAT
                case 'c', 'i' -> { // GLOBAL INST
                    next = line(b, line(b, arg));
                    if (op == 'c') text(new PickleText(arg, 0, arg, next - 1 - arg, true));
                }
                case 'I', 'L', 'S', 'V', 'P', 'F', 'p', 'g' -> next = line(b, arg);
                case '.' -> {
                    boundaries.add(p + 1);
                    return p + 1;
                }
                case '}', ']', ')', '(', 'N', 0x88, 0x89, 't', 0x85, 0x86, 0x87, 'R', 's', 'u', 'b', 'Q', 'a', 'e',
                     0x93, 0x94, 0x81, 0x92, 'd', 'l', 'o', '0', '1', '2', 0x8f, 0x90, 0x91, 0x97, 0x98 -> next = arg;
                default -> throw new IllegalStateException("lost");
            }
            if (next <= p || next > limit) throw new IllegalStateException("lost");
            p = next;
        }
        return p;
    }

    /** Records a pickle field; a checkpoint's pickle has thousands, so keep a spread of them. */
    private void field(int offset, int width, String label, int index) {
        if (index < 48 || index % 16 == 0) fields.add(new Field(offset, width, false, label));
    }

    private void text(PickleText t) {
        if (wholeFilePickle && pickleTexts.size() < 64) pickleTexts.add(t);
    }

    private static int line(byte[] b, int p) {
        while (p < b.length && b[p] != '\n') p++;
        return p + 1;
    }

    // ---------------------------------------------------------------- bytes

    private void f(int offset, int width, String label) {
        fields.add(new Field(offset, width, false, label));
    }

    static long le(byte[] b, int p, int w) {
        long v = 0;
        for (int i = w - 1; i >= 0; i--) v = (v << 8) | (b[p + i] & 0xFF);
        return v;
    }

    static long be(byte[] b, int p, int w) {
        long v = 0;
        for (int i = 0; i < w; i++) v = (v << 8) | (b[p + i] & 0xFF);
        return v;
    }

    static boolean startsWith(byte[] b, int at, byte... magic) {
        if (at < 0 || at + magic.length > b.length) return false;
        for (int i = 0; i < magic.length; i++) if (b[at + i] != magic[i]) return false;
        return true;
    }

    static int indexOf(byte[] b, int from, String ascii) {
        byte[] s = ascii.getBytes(StandardCharsets.ISO_8859_1);
        outer:
        for (int i = Math.max(0, from); i + s.length <= b.length; i++) {
            for (int j = 0; j < s.length; j++) if (b[i + j] != s[j]) continue outer;
            return i;
        }
        return -1;
    }
}
