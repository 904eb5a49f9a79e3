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
import io.anamnesis.api.spi.RangeChannel;

import java.io.IOException;
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
 * later ({@link ZipLayout}) and the legacy stream of earlier versions ({@link LegacyLayout}).
 * HF {@code pytorch_model.bin} is the same format; detection is by content, not extension.
 *
 * <p>Each layout runs the pickle and finds where every storage's bytes start; both then end
 * in {@link #archive}, which checks every view against its storage and the limits, bounds
 * what all views together may expand to, and describes the checkpoint. {@link #open} reads
 * headers, directories and pickles only: never tensor bytes.
 */
public final class PthReader implements FormatReader {
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
            byte[] magic = LegacyLayout.MAGIC_LONG1;
            for (int at = 2; at + magic.length <= Math.min(n, 16 + magic.length); at++) {
                if (b.slice(at, magic.length).equals(ByteBuffer.wrap(magic))) return true;
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

    /**
     * A file read by range requests: a zip's directory from the end (the channel fetches the
     * file's tail in one request), then {@code data.pkl} and {@code byteorder}; storages are
     * placed from the directory, not their local headers, so the count of requests does not
     * grow with the count of tensors. A legacy (pre-1.6) file is refused: its storages are
     * chained one after another, a request each to find.
     */
    @Override
    public TensorArchive openHeader(RangeChannel channel, ParseLimits limits) {
        return open(null, channel.fileName(), channel, limits, true);
    }

    /** Opens from a channel the archive then owns (tests pass one that counts bytes read). */
    static PthArchive open(Path path, FileChannel ch, ParseLimits limits) {
        return open(path, path.getFileName().toString(), ch, limits, false);
    }

    private static PthArchive open(Path path, String name, FileChannel ch, ParseLimits limits, boolean headersOnly) {
        boolean ok = false;
        try {
            long size = ch.size();
            if (size == 0) throw new MalformedFileException(name + " is empty, not a torch.save checkpoint");
            ByteBuffer head = readAt(ch, 0, (int) Math.min(size, 4));
            PthArchive a;
            if (size >= 4 && head.getInt(0) == 0x04034b50 || size >= 4 && head.getInt(0) == 0x06054b50) {
                a = ZipLayout.read(path, ch, size, limits, headersOnly);
            } else if ((head.get(0) & 0xFF) == 0x80) {
                if (headersOnly) {
                    throw new UnsupportedFeatureException(name + " is a legacy (pre-1.6) torch.save file, whose storages"
                            + " are found one after another through the whole file: it cannot be read by range requests;"
                            + " download it first");
                }
                a = LegacyLayout.read(path, ch, size, limits);
            } else {
                throw new MalformedFileException(name + " is neither a torch.save zip nor a legacy torch pickle stream");
            }
            ok = true;
            return a;
        } catch (IOException e) {
            throw new TensorIOException("cannot read " + (path == null ? name : path) + ": " + e.getMessage(), e);
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

    /** Reads exactly {@code len} bytes at {@code pos}, little-endian; a file that ends first is truncated. */
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

    // ---------------------------------------------------------------- the shared tail

    /** Where a found tensor's storage starts in the file, as a layout knows it (or a typed error). */
    @FunctionalInterface
    interface StorageOffsets {
        long of(Checkpoint.Found tensor);
    }

    /** The order of {@code properties()}: a layout's own entries among those every checkpoint has. */
    private static final List<String> PROPERTY_ORDER = List.of(
            "layout", "record prefix", "pickle protocol", "byte order", "storages", "records", "globals", "weights_only");

    /**
     * What both layouts end with: every tensor the walk found placed at its storage (checked
     * against it and the limits), the total bounded, and the archive described.
     *
     * @param layoutProperties the layout's own entries ({@code layout}, {@code byte order}, ...)
     */
    static PthArchive archive(Path path, FileChannel ch, long fileSize, Unpickler vm, Checkpoint cp,
                              StorageOffsets storages, boolean bigEndian, Map<String, String> layoutProperties,
                              ParseLimits limits) {
        List<PthArchive.Placed> placed = new ArrayList<>();
        for (Checkpoint.Found f : cp.tensors) placed.add(place(f, storages.of(f), bigEndian, limits));
        checkExpansion(placed, fileSize, limits);

        Map<String, String> all = new HashMap<>(layoutProperties);
        all.put("pickle protocol", Integer.toString(vm.protocol));
        all.put("storages", Integer.toString(vm.storages.size()));
        all.put("globals", String.join(", ", vm.globals));
        all.put("weights_only", verdict(vm));
        Map<String, String> props = new LinkedHashMap<>();
        for (String k : PROPERTY_ORDER) {
            if (all.containsKey(k)) props.put(k, all.get(k));
        }
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
