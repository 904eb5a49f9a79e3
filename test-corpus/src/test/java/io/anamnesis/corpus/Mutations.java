package io.anamnesis.corpus;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32;

/**
 * A fixed, seeded set of hostile variants of one valid file. Every mutant has an id that
 * says what was done ({@code trunc@24}, {@code u64@16=2^63-1(gguf.kv_count)},
 * {@code flip@37.5}), the same on every run and every machine: the seed is the file's
 * name and the random source is SplitMix64, written out here so no JDK change can move it.
 */
final class Mutations {

    /** One variant: its id and how to make it from the original bytes. */
    record Mutant(String id, UnaryOperator<byte[]> make, Map<String, byte[]> sidecars) {
        Mutant(String id, UnaryOperator<byte[]> make) {
            this(id, make, Map.of());
        }
    }

    /** Bytes of the original that the expensive mutations (regions, flips) look at. */
    static final int HEAD = 4096;
    /** Above this size only truncations and header fields are tried. */
    static final int LARGE = 4 << 20;

    private Mutations() {
    }

    /** At most {@code cap} mutants of {@code original}, seeded by {@code seedName}. */
    static List<Mutant> of(String seedName, byte[] original, int cap) {
        int n = original.length;
        FileAnatomy anatomy = FileAnatomy.of(original);
        SplitMix rnd = new SplitMix(seedName);
        int head = Math.min(n, HEAD);
        Map<String, List<Mutant>> byKind = new LinkedHashMap<>();

        // truncation: every header boundary and its neighbours, small lengths, powers of two
        TreeSet<Integer> cuts = new TreeSet<>();
        for (int b : anatomy.boundaries) for (int d = -1; d <= 1; d++) cuts.add(b + d);
        for (int i = 0; i <= 16; i++) cuts.add(i);
        for (int p = 32; p < n; p <<= 1) {
            cuts.add(p - 1);
            cuts.add(p);
        }
        for (int d : new int[]{1, 2, 3, 4, 8, 16, 31, 32, 33}) cuts.add(n - d);
        cuts.add(n / 2);
        cuts.add(n / 3);
        for (int i = 0; i < 8 && n > 0; i++) cuts.add(rnd.below(n));
        List<Mutant> trunc = new ArrayList<>();
        for (int c : cuts) {
            if (c < 0 || c >= n) continue;
            trunc.add(new Mutant("trunc@" + c, b -> Arrays.copyOf(b, c)));
        }
        byKind.put("trunc", trunc);

        // length, count and offset fields: huge, negative, off by one, the file's size
        List<Mutant> fields = new ArrayList<>();
        for (FileAnatomy.Field f : anatomy.fields) {
            if (f.offset() < 0 || f.offset() + f.width() > n) continue;
            long orig = f.bigEndian() ? FileAnatomy.be(original, f.offset(), f.width())
                    : FileAnatomy.le(original, f.offset(), f.width());
            for (var v : hostileValues(f.width(), orig, n).entrySet()) {
                long value = v.getValue();
                String id = "u" + 8 * f.width() + "@" + f.offset() + "=" + v.getKey() + "(" + f.label() + ")";
                fields.add(new Mutant(id, b -> repairCrc(anatomy, f.offset(),
                        put(b.clone(), f.offset(), f.width(), f.bigEndian(), value))));
            }
        }
        // GGUF: every block type in place of the stored one, ne[] reshuffled with the same element count
        for (FileAnatomy.Dims d : anatomy.dims) {
            if (d.typeOffset() + 4 > n) continue;
            for (int type = 0; type <= 41; type++) {
                int ty = type;
                fields.add(new Mutant("gguf.type@" + d.typeOffset() + "=" + type,
                        b -> put(b.clone(), d.typeOffset(), 4, d.bigEndian(), ty)));
            }
            if (d.offsets().length >= 2) {
                int o0 = d.offsets()[0];
                int o1 = d.offsets()[1];
                long ne0 = d.bigEndian() ? FileAnatomy.be(original, o0, d.width()) : FileAnatomy.le(original, o0, d.width());
                long ne1 = d.bigEndian() ? FileAnatomy.be(original, o1, d.width()) : FileAnatomy.le(original, o1, d.width());
                long[][] variants = {{ne1, ne0}, {ne0 / 2, ne1 * 2}, {ne0 * 2, ne1 / 2}, {1, ne0 * ne1}, {ne0 * ne1, 1}};
                for (long[] v : variants) {
                    fields.add(new Mutant("gguf.ne@" + o0 + "=" + v[0] + "," + v[1], b -> {
                        byte[] c = put(b.clone(), o0, d.width(), d.bigEndian(), v[0]);
                        return put(c, o1, d.width(), d.bigEndian(), v[1]);
                    }));
                }
            }
        }
        byKind.put("field", fields);

        // text headers (safetensors JSON, NPY dict): numbers and strings replaced, length prefix kept right
        List<Mutant> text = new ArrayList<>();
        for (FileAnatomy.TextHeader t : anatomy.textHeaders) {
            String s = new String(original, t.start(), t.length(), StandardCharsets.ISO_8859_1);
            Matcher m = Pattern.compile("-?\\d+|\"(?:[^\"\\\\]|\\\\.)*\"|[\\[\\]{}:,()]").matcher(s);
            int k = 0;
            while (m.find() && k < 400) {
                k++;
                String tok = m.group();
                int at = m.start();
                int end = m.end();
                String[] replacements = tok.startsWith("\"")
                        ? new String[]{"\"\"", "\"Q4_K\"", "\"F8_E4M3\"", "\"\\u0000\"", "\"\\ud800\"", "1", "null",
                        "[]", "{}", "\"" + "x".repeat(300) + "\""}
                        : Character.isDigit(tok.charAt(0)) || tok.charAt(0) == '-'
                        ? new String[]{"0", "-1", "4294967295", "4294967296", "9223372036854775807",
                        "18446744073709551615", "99999999999999999999999", "1e400", "1.5", "" + (n + 1)}
                        : new String[]{"", tok + tok, "[", "{", "\"", " "};
                for (String r : replacements) {
                    String edited = s.substring(0, at) + r + s.substring(end);
                    String id = "text@" + (t.start() + at) + "(" + t.label() + "):" + abbreviate(tok) + "->" + abbreviate(r);
                    text.add(new Mutant(id, b -> replaceText(b, t, edited)));
                }
            }
        }
        // pickle strings and GLOBALs: other storage types, rebuild functions, paths out of the archive
        for (FileAnatomy.PickleText t : anatomy.pickleTexts) {
            String[] replacements = t.global()
                    ? new String[]{"torch\nHalfStorage", "torch\nBFloat16Storage", "torch\nQInt8Storage",
                    "torch\nComplexDoubleStorage", "torch\nBoolStorage", "torch._utils\n_rebuild_tensor_v2",
                    "torch._utils\n_rebuild_qtensor", "torch\nFloatTensor", "collections\nOrderedDict",
                    "builtins\ngetattr", "torch\nUntypedStorage", "torch\n", "\n"}
                    : new String[]{"", "0", "99999", "../data.pkl", "/etc/passwd", "cuda:0", "x".repeat(300),
                    "\u00ff\u0000", "data/0", "..", "FloatStorage"};
            for (String r : replacements) {
                byte[] rb = r.getBytes(StandardCharsets.UTF_8);
                if (t.width() == 1 && rb.length > 255) continue;
                String id = "pickle@" + t.start() + ":" + abbreviate(new String(original, t.start(), Math.min(t.length(), 40),
                        StandardCharsets.ISO_8859_1).replace('\n', '/')) + "->" + abbreviate(r.replace('\n', '/'));
                text.add(new Mutant(id, b -> {
                    int prefixEnd = t.width() == 0 ? t.start() : t.lengthOffset();
                    byte[] c = new byte[b.length - t.length() + rb.length + (t.width() == 0 ? 0 : 0)];
                    System.arraycopy(b, 0, c, 0, prefixEnd);
                    if (t.width() > 0) put(c, t.lengthOffset(), t.width(), false, rb.length);
                    System.arraycopy(rb, 0, c, t.start(), rb.length);
                    System.arraycopy(b, t.start() + t.length(), c, t.start() + rb.length, b.length - t.start() - t.length());
                    return c;
                }));
            }
        }
        byKind.put("text", text);

        // huge values written at arbitrary places of the head: fields the anatomy missed
        List<Mutant> stamps = new ArrayList<>();
        for (int i = 0; i < 64 && head >= 8; i++) {
            int at = rnd.below(head - 7);
            long v = switch (i % 4) {
                case 0 -> 0xFFFFFFFFL;
                case 1 -> 1L << 62;
                case 2 -> Long.MAX_VALUE;
                default -> -1L;
            };
            int w = i % 4 == 0 ? 4 : 8;
            stamps.add(new Mutant("stamp" + w + "@" + at + "=" + Long.toHexString(v),
                    b -> repairCrc(anatomy, at, put(b.clone(), at, w, false, v))));
        }
        byKind.put("stamp", stamps);

        // single bit flips, most in the first 64 bytes
        List<Mutant> flips = new ArrayList<>();
        for (int i = 0; i < 96 && head > 0; i++) {
            int at = i % 3 == 0 ? rnd.below(Math.min(head, 64)) : rnd.below(head);
            int bit = rnd.below(8);
            flips.add(new Mutant("flip@" + at + "." + bit, b -> {
                byte[] c = b.clone();
                c[at] ^= (byte) (1 << bit);
                return repairCrc(anatomy, at, c);
            }));
        }
        byKind.put("flip", flips);

        // byte overwrites with values parsers treat specially
        byte[] specials = {0, (byte) 0xFF, 0x7F, (byte) 0x80, '"', '{', '}', ']', ',', '\\', '9', '.', '\n'};
        List<Mutant> bytes = new ArrayList<>();
        for (int i = 0; i < 64 && head > 0; i++) {
            int at = rnd.below(head);
            byte v = i % 2 == 0 ? specials[rnd.below(specials.length)] : (byte) rnd.below(256);
            bytes.add(new Mutant("set@" + at + "=" + (v & 0xFF), b -> {
                byte[] c = b.clone();
                c[at] = v;
                return repairCrc(anatomy, at, c);
            }));
        }
        byKind.put("byte", bytes);

        // regions removed, duplicated, zeroed; garbage appended
        List<Mutant> regions = new ArrayList<>();
        if (n <= LARGE) {
            List<Integer> starts = new ArrayList<>(anatomy.boundaries);
            for (int i = 0; i < 8 && head > 0; i++) starts.add(rnd.below(head));
            for (int s : starts) {
                if (s >= n) continue;
                for (int len : new int[]{1, 4, 8, 64, 512}) {
                    int l = Math.min(len, n - s);
                    regions.add(new Mutant("del@" + s + "+" + l, b -> {
                        byte[] c = new byte[b.length - l];
                        System.arraycopy(b, 0, c, 0, s);
                        System.arraycopy(b, s + l, c, s, b.length - s - l);
                        return c;
                    }));
                    regions.add(new Mutant("dup@" + s + "+" + l, b -> {
                        byte[] c = new byte[b.length + l];
                        System.arraycopy(b, 0, c, 0, s + l);
                        System.arraycopy(b, s, c, s + l, b.length - s);
                        return c;
                    }));
                    if (len == 64) {
                        regions.add(new Mutant("zero@" + s + "+" + l, b -> {
                            byte[] c = b.clone();
                            Arrays.fill(c, s, s + l, (byte) 0);
                            return c;
                        }));
                    }
                }
            }
            long garbageSeed = rnd.next();
            regions.add(new Mutant("append+1", b -> Arrays.copyOf(b, b.length + 1)));
            regions.add(new Mutant("append+4096garbage", b -> {
                byte[] c = Arrays.copyOf(b, b.length + 4096);
                SplitMix g = new SplitMix(garbageSeed);
                for (int i = b.length; i < c.length; i++) c[i] = (byte) g.next();
                return c;
            }));
            regions.add(new Mutant("append+self", b -> {
                byte[] c = Arrays.copyOf(b, b.length * 2);
                System.arraycopy(b, 0, c, b.length, b.length);
                return c;
            }));
        }
        byKind.put("region", regions);

        // share the cap: structure-aware kinds first, then the blind ones
        Map<String, Integer> weight = Map.of("trunc", 20, "field", 30, "text", 14, "stamp", 6, "flip", 12,
                "byte", 8, "region", 10);
        List<Mutant> out = new ArrayList<>();
        int budget = cap;
        List<String> kinds = new ArrayList<>(byKind.keySet());
        int totalWeight = kinds.stream().mapToInt(weight::get).sum();
        int[] quota = new int[kinds.size()];
        for (int i = 0; i < kinds.size(); i++) quota[i] = cap * weight.get(kinds.get(i)) / totalWeight;
        // quota a kind leaves unused goes to the others, in order
        int spare = cap - Arrays.stream(quota).sum();
        for (int i = 0; i < kinds.size(); i++) {
            int have = byKind.get(kinds.get(i)).size();
            if (have < quota[i]) {
                spare += quota[i] - have;
                quota[i] = have;
            }
        }
        for (int i = 0; i < kinds.size() && spare > 0; i++) {
            int have = byKind.get(kinds.get(i)).size();
            int extra = Math.min(spare, have - quota[i]);
            quota[i] += extra;
            spare -= extra;
        }
        for (int i = 0; i < kinds.size() && budget > 0; i++) {
            List<Mutant> all = byKind.get(kinds.get(i));
            List<Mutant> chosen = pick(all, Math.min(quota[i], budget), new SplitMix(seedName + "/" + kinds.get(i)));
            out.addAll(chosen);
            budget -= chosen.size();
        }
        // ids stay unique even when two draws coincide
        Map<String, Mutant> unique = new LinkedHashMap<>();
        for (Mutant m : out) unique.putIfAbsent(m.id(), m);
        return List.copyOf(unique.values());
    }

    private static Map<String, Long> hostileValues(int width, long orig, int fileSize) {
        Map<String, Long> v = new LinkedHashMap<>();
        switch (width) {
            case 1 -> {
                v.put("0", 0L);
                v.put("0xFF", 0xFFL);
                v.put("orig+1", (orig + 1) & 0xFF);
            }
            case 2 -> {
                v.put("0", 0L);
                v.put("0xFFFF", 0xFFFFL);
                v.put("0x8000", 0x8000L);
                v.put("orig+1", (orig + 1) & 0xFFFF);
            }
            case 4 -> {
                v.put("0", 0L);
                v.put("0xFFFFFFFF", 0xFFFFFFFFL);
                v.put("0x7FFFFFFF", 0x7FFFFFFFL);
                v.put("0x80000000", 0x80000000L);
                v.put("orig+1", (orig + 1) & 0xFFFFFFFFL);
                v.put("orig-1", (orig - 1) & 0xFFFFFFFFL);
                v.put("filesize", (long) fileSize);
            }
            default -> {
                v.put("0", 0L);
                v.put("0xFFFFFFFF", 0xFFFFFFFFL);
                v.put("2^31", 1L << 31);
                v.put("2^62", 1L << 62);
                v.put("2^63-1", Long.MAX_VALUE);
                v.put("-1", -1L);
                v.put("-2^63", Long.MIN_VALUE);
                v.put("orig+1", orig + 1);
                v.put("orig-1", orig - 1);
                v.put("filesize", (long) fileSize);
            }
        }
        return v;
    }

    private static byte[] put(byte[] b, int at, int width, boolean bigEndian, long value) {
        for (int i = 0; i < width; i++) {
            b[bigEndian ? at + width - 1 - i : at + i] = (byte) (value >>> (8 * i));
        }
        return b;
    }

    private static byte[] replaceText(byte[] b, FileAnatomy.TextHeader t, String edited) {
        byte[] text = edited.getBytes(StandardCharsets.ISO_8859_1);
        byte[] c = new byte[b.length - t.length() + text.length];
        System.arraycopy(b, 0, c, 0, t.start());
        System.arraycopy(text, 0, c, t.start(), text.length);
        System.arraycopy(b, t.start() + t.length(), c, t.start() + text.length, b.length - t.start() - t.length());
        long max = t.lengthWidth() == 8 ? Long.MAX_VALUE : (1L << (8 * t.lengthWidth())) - 1;
        return put(c, t.lengthOffset(), t.lengthWidth(), false, Math.min(max, text.length));
    }

    /** A same-length edit inside a stored ZIP member gets a fresh CRC, so it reaches the member's parser. */
    private static byte[] repairCrc(FileAnatomy a, int at, byte[] c) {
        for (FileAnatomy.StoredMember m : a.storedMembers) {
            if (m.contains(at) && m.dataStart() + m.dataLength() <= c.length) {
                CRC32 crc = new CRC32();
                crc.update(c, m.dataStart(), m.dataLength());
                put(c, m.localHeader() + 14, 4, false, crc.getValue());
                put(c, m.central() + 16, 4, false, crc.getValue());
            }
        }
        return c;
    }

    private static String abbreviate(String s) {
        return s.length() <= 12 ? s : s.substring(0, 10) + "..";
    }

    /** {@code k} of {@code all}, chosen by a seeded shuffle, kept in their original order. */
    static List<Mutant> pick(List<Mutant> all, int k, SplitMix rnd) {
        if (k >= all.size()) return all;
        int[] idx = new int[all.size()];
        for (int i = 0; i < idx.length; i++) idx[i] = i;
        for (int i = idx.length - 1; i > 0; i--) {
            int j = rnd.below(i + 1);
            int t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
        }
        int[] chosen = Arrays.copyOf(idx, k);
        Arrays.sort(chosen);
        List<Mutant> out = new ArrayList<>(k);
        for (int i : chosen) out.add(all.get(i));
        return out;
    }

    /** SplitMix64 (Steele, Lea, Flood 2014), seeded from a name's UTF-8 bytes. */
    static final class SplitMix {
        private long state;

        SplitMix(long seed) {
            state = seed;
        }

        SplitMix(String name) {
            long h = 0xcbf29ce484222325L; // FNV-1a 64
            for (byte x : name.getBytes(StandardCharsets.UTF_8)) {
                h ^= x & 0xFF;
                h *= 0x100000001b3L;
            }
            state = h;
        }

        long next() {
            long z = (state += 0x9E3779B97F4A7C15L);
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            return z ^ (z >>> 31);
        }

        int below(int bound) {
            return (int) Long.remainderUnsigned(next(), bound);
        }
    }
}
