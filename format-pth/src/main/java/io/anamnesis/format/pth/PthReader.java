package io.anamnesis.format.pth;

import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.FileProbe;
import io.anamnesis.api.spi.FormatReader;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * PyTorch checkpoints as {@code torch.save} writes them: the zip layout of torch 1.6 and
 * later ({@code <prefix>/data.pkl} plus one STORED {@code <prefix>/data/<key>} record per
 * storage) and the legacy stream of earlier versions (magic number, protocol, system info,
 * the pickle, the storage keys, then each storage as an 8-byte element count and its bytes).
 * HF {@code pytorch_model.bin} is the same format; detection is by content, not extension.
 *
 * <p>{@link #open} reads the zip's end records and central directory, one local header per
 * storage and {@code data.pkl}: never tensor bytes. Every view is checked against its
 * storage, and every storage against its record, before {@code open} returns.
 */
public final class PthReader implements FormatReader {
    /** torch.serialization.MAGIC_NUMBER, as pickled by LONG1: 10 bytes little-endian. */
    static final BigInteger LEGACY_MAGIC = new BigInteger("1950a86a20f9469cfc6c", 16);
    private static final byte[] LEGACY_MAGIC_LONG1 = {(byte) 0x8a, 0x0a,
            0x6c, (byte) 0xfc, (byte) 0x9c, 0x46, (byte) 0xf9, 0x20, 0x6a, (byte) 0xa8, 0x50, 0x19};
    static final String WEIGHTS_ONLY_OK = "accepted by torch.load(weights_only=True)";

    /** The provider {@link java.util.ServiceLoader} instantiates; stateless. */
    public PthReader() {
    }

    @Override
    public String format() {
        return "pth";
    }

    @Override
    public List<String> fileExtensions() {
        return List.of("pth", "pt", "bin", "ckpt");
    }

    @Override
    public String description() {
        return "PyTorch torch.save checkpoints (zip and legacy), read with an allowlisted pickle VM; no code runs";
    }

    @Override
    public boolean canRead(FileProbe probe) {
        ByteBuffer b = probe.bytes();
        int n = b.remaining();
        if (probe.startsWith((byte) 'P', (byte) 'K', (byte) 3, (byte) 4) && n >= 30) {
            int nameLen = b.getShort(26) & 0xFFFF;
            if (30 + nameLen > n) return false;
            byte[] name = new byte[nameLen];
            b.get(30, name);
            return new String(name, StandardCharsets.ISO_8859_1).endsWith("data.pkl");
        }
        if (n > 2 && (b.get(0) & 0xFF) == 0x80) {
            // Legacy: PROTO, maybe a FRAME, then the magic number as LONG1.
            for (int at = 2; at + LEGACY_MAGIC_LONG1.length <= Math.min(n, 16 + LEGACY_MAGIC_LONG1.length); at++) {
                if (b.slice(at, LEGACY_MAGIC_LONG1.length).equals(ByteBuffer.wrap(LEGACY_MAGIC_LONG1))) return true;
            }
        }
        return false;
    }

    @Override
    public TensorArchive open(Path path, ParseLimits limits) {
        FileChannel ch;
        try {
            ch = FileChannel.open(path, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            throw new TensorIOException("no such file: " + path, e);
        } catch (IOException e) {
            throw new TensorIOException("cannot open " + path + ": " + e.getMessage(), e);
        }
        return open(path, ch, limits);
    }

    /** Opens from a channel the archive then owns (tests pass one that counts bytes read). */
    static PthArchive open(Path path, FileChannel ch, ParseLimits limits) {
        boolean ok = false;
        try {
            long size = ch.size();
            if (size == 0) throw new MalformedFileException(path.getFileName() + " is empty, not a torch.save checkpoint");
            ByteBuffer head = ZipDirectory.readAt(ch, 0, (int) Math.min(size, 4));
            PthArchive a;
            if (size >= 4 && head.getInt(0) == 0x04034b50 || size >= 4 && head.getInt(0) == 0x06054b50) {
                a = openZip(path, ch, size, limits);
            } else if ((head.get(0) & 0xFF) == 0x80) {
                a = openLegacy(path, ch, size, limits);
            } else {
                throw new MalformedFileException(path.getFileName() + " is neither a torch.save zip nor a legacy torch pickle stream");
            }
            ok = true;
            return a;
        } catch (IOException e) {
            throw new TensorIOException("cannot read " + path + ": " + e.getMessage(), e);
        } catch (StackOverflowError | OutOfMemoryError e) {
            // Defence in depth: the VM is iterative and bounded, so this is never expected.
            throw new LimitExceededException("checkpoint exhausted the parser's resources: " + e);
        } finally {
            if (!ok) {
                try {
                    ch.close();
                } catch (IOException ignored) {
                    // the parse error is the one to report
                }
            }
        }
    }

    // ---------------------------------------------------------------- zip layout

    private static PthArchive openZip(Path path, FileChannel ch, long size, ParseLimits limits) {
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
        List<PthArchive.Placed> placed = new ArrayList<>();
        for (Checkpoint.Found f : cp.tensors) {
            PyValue.Storage s = f.tensor().storage();
            String recordName = prefix + "/data/" + s.key();
            long bytes = s.dtype().byteSize(s.numel());
            Long at = storageOffsets.get(s.key());
            if (at == null) {
                var rec = zip.record(recordName);
                if (rec.isEmpty()) {
                    if (bytes != 0) throw MalformedFileException.inTensor(f.name(), "its storage record " + recordName + " is missing");
                    at = 0L;
                } else {
                    ZipDirectory.Record r = rec.get();
                    if (r.size() < bytes) {
                        throw MalformedFileException.inTensor(f.name(), "storage record " + recordName + " holds " + r.size()
                                + " bytes, the pickle declares " + s.numel() + " x " + s.dtype() + " = " + bytes);
                    }
                    at = zip.dataOffset(r);
                }
                storageOffsets.put(s.key(), at);
            }
            placed.add(place(f, at, bigEndian, limits));
        }
        checkExpansion(placed, size, limits);

        Map<String, String> props = new LinkedHashMap<>();
        props.put("layout", "zip");
        props.put("record prefix", prefix);
        props.put("pickle protocol", Integer.toString(vm.protocol));
        props.put("byte order", bigEndian ? "big-endian (swapped when read)" : "little-endian");
        props.put("storages", Integer.toString(vm.storages.size()));
        props.put("records", Integer.toString(zip.records.size()));
        props.put("globals", String.join(", ", vm.globals));
        props.put("weights_only", verdict(vm));
        return new PthArchive(path, ch, placed, cp.metadata, cp.structured, cp.typed, props);
    }

    // ---------------------------------------------------------------- legacy layout

    private static PthArchive openLegacy(Path path, FileChannel ch, long size, ParseLimits limits) throws IOException {
        Unpickler vm = new Unpickler(limits);
        List<PthArchive.Placed> placed = new ArrayList<>();
        Checkpoint cp;
        boolean bigEndian;
        Boolean hostLittle;
        // The pickles are read through a mapping closed before open returns; only the pages
        // they touch (and one count per storage) are read, never the storage bytes.
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment file = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, scratch);
            Object magic = vm.load(file, 0, pickleEnd(0, size, limits));
            if (!(magic instanceof Long || magic instanceof BigInteger) || !LEGACY_MAGIC.equals(asBig(magic))) {
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
            bigEndian = false;
            Object root = vm.load(file, vm.position(), pickleEnd(vm.position(), size, limits));
            Object keys = vm.load(file, vm.position(), pickleEnd(vm.position(), size, limits));
            if (!(keys instanceof PyValue.PyList keyList)) throw new MalformedFileException("legacy storage key list is a " + Unpickler.kind(keys));
            cp = Checkpoint.walk(root, limits, Checkpoint.budget(vm.totalValues, limits));

            Map<String, Long> storageOffsets = new HashMap<>();
            long pos = vm.position();
            for (Object k : keyList.items) {
                if (!(k instanceof String key)) throw new MalformedFileException("legacy storage key is a " + Unpickler.kind(k));
                PyValue.Storage s = vm.storages.get(key);
                if (s == null) throw new MalformedFileException("legacy storage " + key + " is listed but never referenced");
                if (s.dtype() == null) throw new UnsupportedFeatureException("legacy storage " + key + " of type " + s.typeName());
                if (size - pos < 8) throw new MalformedFileException("legacy file ends before storage " + key);
                long count = ZipDirectory.readAt(ch, pos, 8).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
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
            for (Checkpoint.Found f : cp.tensors) {
                Long at = storageOffsets.get(f.tensor().storage().key());
                if (at == null) {
                    if (f.tensor().storage().numel() != 0) {
                        throw MalformedFileException.inTensor(f.name(), "its storage " + f.tensor().storage().key() + " is not in the file");
                    }
                    at = 0L;
                }
                placed.add(place(f, at, bigEndian, limits));
            }
            checkExpansion(placed, size, limits);
        }
        Map<String, String> props = new LinkedHashMap<>();
        props.put("layout", "legacy");
        props.put("pickle protocol", Integer.toString(vm.protocol));
        props.put("byte order", "little-endian" + (hostLittle ? "" : " (written on a big-endian host)"));
        props.put("storages", Integer.toString(vm.storages.size()));
        props.put("globals", String.join(", ", vm.globals));
        props.put("weights_only", verdict(vm));
        return new PthArchive(path, ch, placed, cp.metadata, cp.structured, cp.typed, props);
    }

    /**
     * Every GLOBAL passed the allowlist (anything else stopped the parse with a
     * SecurityViolationException), so only a construct torch refuses beyond globals can
     * make the verdict negative.
     */
    private static String verdict(Unpickler vm) {
        return vm.weightsOnlyObjection == null ? WEIGHTS_ONLY_OK : "would be rejected: " + vm.weightsOnlyObjection;
    }

    private static long pickleEnd(long start, long size, ParseLimits limits) {
        return start + Math.min(size - start, limits.maxPickleBytes());
    }

    private static BigInteger asBig(Object o) {
        return o instanceof Long l ? BigInteger.valueOf(l) : (BigInteger) o;
    }

    private static Boolean littleEndianFlag(Object sysInfo) {
        if (sysInfo instanceof PyValue.PyDict d) {
            for (int i = 0; i < d.keys.size(); i++) {
                if ("little_endian".equals(d.keys.get(i)) && d.values.get(i) instanceof Boolean b) return b;
            }
        }
        return Boolean.TRUE;
    }

    // ---------------------------------------------------------------- views

    /**
     * Views may legitimately read more than they store (tied weights, several views of one
     * storage, stride-0 expansions), but not without bound: all tensors together may hold at
     * most {@code maxInflationRatio} times the file plus {@code maxInflatedBytes}, the same
     * budget a compressed member gets.
     */
    private static void checkExpansion(List<PthArchive.Placed> placed, long fileSize, ParseLimits limits) {
        long budget;
        try {
            budget = Math.addExact(Math.multiplyExact(fileSize, limits.maxInflationRatio()), limits.maxInflatedBytes());
        } catch (ArithmeticException e) {
            budget = Long.MAX_VALUE;
        }
        long total = 0;
        for (PthArchive.Placed p : placed) {
            total += p.entry().byteSize(); // each is at most maxInflatedBytes, so this cannot overflow before it trips
            if (total > budget) {
                throw LimitExceededException.inTensor(p.entry().name(), "the checkpoint's tensors add up to more than "
                        + budget + " bytes from a " + fileSize + "-byte file (expanded or repeated views)");
            }
        }
    }

    /** Checks a view against its storage and the limits, and fixes its entry. */
    private static PthArchive.Placed place(Checkpoint.Found f, long storageOffset, boolean bigEndian, ParseLimits limits) {
        PyValue.Tensor t = f.tensor();
        DType dtype = t.storage().dtype();
        Shape shape = Shape.of(t.sizes());
        long elements;
        long bytes;
        try {
            elements = shape.elementCount();
            bytes = dtype.byteSize(elements);
        } catch (ArithmeticException e) {
            throw LimitExceededException.inTensor(f.name(), "shape " + shape + " overflows an element count");
        }
        if (bytes > limits.maxInflatedBytes()) {
            // An expanded view (stride 0) can declare far more elements than its storage holds.
            throw LimitExceededException.inTensor(f.name(), "shape " + shape + " of " + dtype + " is " + bytes
                    + " bytes, over the limit of " + limits.maxInflatedBytes());
        }
        long last;
        try {
            last = Strided.lastElement(t.offset(), t.sizes(), t.strides());
        } catch (ArithmeticException e) {
            throw MalformedFileException.inTensor(f.name(), "its view overflows a storage index");
        }
        if (last >= t.storage().numel()) {
            throw MalformedFileException.inTensor(f.name(), "its view (offset " + t.offset() + ", size " + shape
                    + ", stride " + java.util.Arrays.toString(t.strides()) + ") reaches element " + last
                    + " of storage " + t.storage().key() + ", which holds " + t.storage().numel());
        }
        return new PthArchive.Placed(new TensorEntry(f.name(), dtype, shape, bytes), t, storageOffset, bigEndian);
    }
}
