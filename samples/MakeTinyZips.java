import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/**
 * Writes samples/tiny-f32.npz and samples/tiny.pth: two tiny, deterministic state dicts in
 * the zip-based formats, written from their specifications alone (the NPY format 1.0 inside
 * an uncompressed zip, as {@code numpy.savez} writes it; the zip of {@code data.pkl}, one
 * record per storage and {@code version}, with a protocol 2 pickle of an
 * {@code OrderedDict} of {@code torch._utils._rebuild_tensor_v2} calls, as
 * {@code torch.save} writes it). The build trains amn's AOT caches on them, beside the
 * safetensors sample, so that {@code inspect} and {@code remember} of such files start with
 * their classes cached.
 *
 * <pre>java samples/MakeTinyZips.java samples</pre>
 *
 * Both hold {@code layers.0.weight} [16, 32], {@code layers.0.bias} [16] and
 * {@code embed.weight} [8, 32]: F32 in the npz; in the pth F32, F32 and F16. Values come from
 * a fixed xorshift generator, so every run writes the same bytes.
 */
public final class MakeTinyZips {
    private static long state = 0x2545F4914F6CDD1DL;

    private static long next() {
        state ^= state << 13;
        state ^= state >>> 7;
        state ^= state << 17;
        return state;
    }

    private record Tensor(String name, long[] shape, boolean half) {
        int count() {
            long n = 1;
            for (long d : shape) n *= d;
            return (int) n;
        }

        byte[] data() {
            ByteBuffer b = ByteBuffer.allocate(count() * (half ? 2 : 4)).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < count(); i++) {
                float v = ((next() >>> 40) - (1 << 23)) / (float) (1 << 28); // about +-0.03, like trained weights
                if (half) b.putShort(Float.floatToFloat16(v));
                else b.putFloat(v);
            }
            return b.array();
        }
    }

    private static final List<Tensor> TENSORS = List.of(
            new Tensor("layers.0.weight", new long[]{16, 32}, false),
            new Tensor("layers.0.bias", new long[]{16}, false),
            new Tensor("embed.weight", new long[]{8, 32}, false));

    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args.length > 0 ? args[0] : "samples");
        writeNpz(dir.resolve("tiny-f32.npz"));
        state = 0x2545F4914F6CDD1DL;
        writePth(dir.resolve("tiny.pth"));
    }

    // ---- npz: one NPY 1.0 file per array, stored (not deflated)

    private static void writeNpz(Path out) throws IOException {
        try (OutputStream os = Files.newOutputStream(out); ZipOutputStream zip = new ZipOutputStream(os)) {
            for (Tensor t : TENSORS) stored(zip, t.name() + ".npy", npy(t.shape(), t.data()));
        }
    }

    /** Magic, version 1.0, the header's length, the header dict padded with spaces to a multiple of 64 and '\n', the data. */
    private static byte[] npy(long[] shape, byte[] data) {
        StringBuilder dims = new StringBuilder();
        for (long d : shape) dims.append(d).append(", ");
        String dict = "{'descr': '<f4', 'fortran_order': False, 'shape': ("
                + (shape.length == 1 ? dims : dims.substring(0, dims.length() - 2)) + "), }";
        int prefix = 10;
        int total = (prefix + dict.length() + 1 + 63) / 64 * 64;
        String header = dict + " ".repeat(total - prefix - dict.length() - 1) + "\n";
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(new byte[]{(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0});
        b.write(header.length() & 0xFF);
        b.write(header.length() >>> 8);
        b.writeBytes(header.getBytes(StandardCharsets.US_ASCII));
        b.writeBytes(data);
        return b.toByteArray();
    }

    // ---- pth: torch.save's zip layout

    private static void writePth(Path out) throws IOException {
        List<Tensor> tensors = List.of(TENSORS.get(0), TENSORS.get(1),
                new Tensor(TENSORS.get(2).name(), TENSORS.get(2).shape(), true));
        Pickle p = new Pickle();
        p.op(0x80).op(2);                                             // PROTO 2
        p.global("collections", "OrderedDict").op(')').op('R');      // OrderedDict()
        p.op('(');                                                     // MARK: the items
        for (int k = 0; k < tensors.size(); k++) {
            Tensor t = tensors.get(k);
            p.unicode(t.name());
            p.global("torch._utils", "_rebuild_tensor_v2");
            p.op('(');                                                 // MARK: its arguments
            p.op('(').unicode("storage").global("torch", t.half() ? "HalfStorage" : "FloatStorage")
                    .unicode(Integer.toString(k)).unicode("cpu").integer(t.count()).op('t');
            p.op('Q');                                                 // BINPERSID: the storage
            p.integer(0);                                              // storage offset
            p.op('(');
            for (long d : t.shape()) p.integer((int) d);
            p.op('t');                                                 // size
            p.op('(');
            long stride = 1;
            long[] strides = new long[t.shape().length];
            for (int i = t.shape().length - 1; i >= 0; i--) {
                strides[i] = stride;
                stride *= t.shape()[i];
            }
            for (long s : strides) p.integer((int) s);
            p.op('t');                                                 // stride
            p.op(0x89);                                                // requires_grad False
            p.global("collections", "OrderedDict").op(')').op('R');  // backward hooks
            p.op('t').op('R');                                         // _rebuild_tensor_v2(...)
        }
        p.op('u').op('.');                                             // SETITEMS, STOP
        try (OutputStream os = Files.newOutputStream(out); ZipOutputStream zip = new ZipOutputStream(os)) {
            stored(zip, "tiny/data.pkl", p.bytes());
            stored(zip, "tiny/byteorder", "little".getBytes(StandardCharsets.US_ASCII));
            for (int k = 0; k < tensors.size(); k++) stored(zip, "tiny/data/" + k, tensors.get(k).data());
            stored(zip, "tiny/version", "3\n".getBytes(StandardCharsets.US_ASCII));
        }
    }

    /** The few pickle opcodes torch.save's state dicts use (pickletools' names in the comments above). */
    private static final class Pickle {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        Pickle op(int code) {
            out.write(code);
            return this;
        }

        Pickle global(String module, String name) {
            out.write('c');
            out.writeBytes((module + "\n" + name + "\n").getBytes(StandardCharsets.US_ASCII));
            return this;
        }

        Pickle unicode(String s) {                                     // BINUNICODE
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            out.write('X');
            out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(b.length).array());
            out.writeBytes(b);
            return this;
        }

        Pickle integer(int v) {                                        // BININT1 or BININT
            if (v >= 0 && v < 256) {
                out.write('K');
                out.write(v);
            } else {
                out.write('J');
                out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array());
            }
            return this;
        }

        byte[] bytes() {
            return out.toByteArray();
        }
    }

    private static void stored(ZipOutputStream zip, String name, byte[] data) throws IOException {
        ZipEntry e = new ZipEntry(name);
        e.setMethod(ZipEntry.STORED);
        CRC32 crc = new CRC32();
        crc.update(data);
        e.setSize(data.length);
        e.setCompressedSize(data.length);
        e.setCrc(crc.getValue());
        e.setTime(0);
        zip.putNextEntry(e);
        zip.write(data);
        zip.closeEntry();
    }
}
