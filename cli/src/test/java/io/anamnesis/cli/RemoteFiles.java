package io.anamnesis.cli;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/**
 * Files for the remote tests, written from the formats' specifications (not by our writers):
 * safetensors (8-byte little-endian header length, JSON header, data), GGUF v3 (ggml's
 * gguf.md: magic, version, counts, key/values, tensor infos, aligned data), npz (a zip of
 * NPY v1.0 arrays, as numpy's format.py lays them out) and torch.save's zip (a protocol-2
 * pickle of {@code _rebuild_tensor_v2} calls, PEP 307's opcodes, and one STORED record per
 * storage, as torch/serialization.py lays them out).
 */
final class RemoteFiles {
    private RemoteFiles() {
    }

    /** A safetensors file whose JSON header is exactly {@code headerLength} bytes: one F32 [2, 2] tensor and padding metadata. */
    static byte[] safetensorsWithHeaderLength(int headerLength) {
        String tensor = "\"t\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}";
        String bare = "{\"__metadata__\":{\"pad\":\"\"}," + tensor + "}";
        int pad = headerLength - bare.length();
        if (pad < 0) throw new IllegalArgumentException("header too short: " + headerLength);
        String json = "{\"__metadata__\":{\"pad\":\"" + "x".repeat(pad) + "\"}," + tensor + "}";
        byte[] data = new byte[16];
        ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).putFloat(1f).putFloat(2f).putFloat(3f).putFloat(4f);
        return safetensors(json, data);
    }

    /** A safetensors file of {@code count} one-byte F8_E4M3 tensors with long names: a header of about {@code count * 110} bytes. */
    static byte[] safetensorsManyTensors(int count) {
        StringBuilder json = new StringBuilder("{");
        for (int i = 0; i < count; i++) {
            if (i > 0) json.append(',');
            json.append("\"model.layers.").append(i / 64).append(".mlp.experts.").append(i % 64)
                    .append(".down_proj.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[1,1],\"data_offsets\":[")
                    .append(i).append(',').append(i + 1).append("]}");
        }
        json.append('}');
        byte[] data = new byte[count];
        for (int i = 0; i < count; i++) data[i] = (byte) i;
        return safetensors(json.toString(), data);
    }

    static byte[] safetensors(String json, byte[] data) {
        byte[] header = json.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + header.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(header.length).put(header).put(data);
        return b.array();
    }

    /** {@link #gguf(int, int, int)} of F32 [4] tensors. */
    static byte[] gguf(int tensors, int vocab) {
        return gguf(tensors, vocab, 4);
    }

    /**
     * A GGUF v3 file: {@code general.architecture = "llama"}, a {@code tokenizer.ggml.tokens}
     * array of {@code vocab} strings, and {@code tensors} F32 [{@code elements}] tensors at
     * 32-byte-aligned offsets (the default alignment), tensor i holding i, i+1, ...
     */
    static byte[] gguf(int tensors, int vocab, int elements) {
        long stride = (4L * elements + 31) / 32 * 32;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Le le = new Le(out);
        le.bytes("GGUF".getBytes(StandardCharsets.US_ASCII));
        le.u32(3);
        le.u64(tensors);
        le.u64(2);
        le.string("general.architecture");
        le.u32(8); // STRING
        le.string("llama");
        le.string("tokenizer.ggml.tokens");
        le.u32(9); // ARRAY
        le.u32(8); // of STRING
        le.u64(vocab);
        for (int i = 0; i < vocab; i++) le.string("tok_" + i);
        for (int i = 0; i < tensors; i++) {
            le.string("blk." + (i / 10) + ".ffn_down_" + (i % 10) + ".weight");
            le.u32(1);
            le.u64(elements);
            le.u32(0); // F32
            le.u64(stride * i);
        }
        while (out.size() % 32 != 0) out.write(0);
        for (int i = 0; i < tensors; i++) {
            for (int k = 0; k < elements; k++) le.u32(Float.floatToIntBits(i + k));
            le.bytes(new byte[(int) (stride - 4L * elements)]);
        }
        return out.toByteArray();
    }

    /** Little-endian writes. */
    private record Le(ByteArrayOutputStream out) {
        void bytes(byte[] b) {
            out.writeBytes(b);
        }

        void u32(long v) {
            out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt((int) v).array());
        }

        void u64(long v) {
            out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array());
        }

        void string(String s) {
            byte[] u = s.getBytes(StandardCharsets.UTF_8);
            u64(u.length);
            bytes(u);
        }
    }

    /** An NPY v1.0 array of little-endian F32 values with a shape, its header padded to 64 bytes. */
    static byte[] npy(int[] shape, float... values) {
        StringBuilder dims = new StringBuilder();
        for (int d : shape) dims.append(dims.isEmpty() ? "" : ", ").append(d);
        if (shape.length == 1) dims.append(',');
        String dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
        int unpadded = 10 + dict.length() + 1;
        int total = (unpadded + 63) / 64 * 64;
        String header = dict + " ".repeat(total - unpadded) + "\n";
        ByteBuffer b = ByteBuffer.allocate(10 + header.length() + 4 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 0x93).put("NUMPY".getBytes(StandardCharsets.US_ASCII)).put((byte) 1).put((byte) 0);
        b.putShort((short) header.length()).put(header.getBytes(StandardCharsets.US_ASCII));
        for (float v : values) b.putFloat(v);
        return b.array();
    }

    /**
     * An npz: arrays {@code a} (stored) and {@code b} (deflated), each followed by a stored
     * filler of {@code gap} bytes, so the array headers are far from each other and from the
     * directory at the end.
     */
    static byte[] npz(int gap) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ZipOutputStream zip = new ZipOutputStream(bytes)) {
            stored(zip, "a.npy", npy(new int[]{2, 3}, 1, 2, 3, 4, 5, 6));
            stored(zip, "filler.bin", new byte[gap]);
            ZipEntry b = new ZipEntry("b.npy");
            b.setMethod(ZipEntry.DEFLATED);
            zip.putNextEntry(b);
            zip.write(npy(new int[]{4}, 0.5f, 1.5f, 2.5f, 3.5f));
            zip.closeEntry();
            stored(zip, "filler2.bin", new byte[gap]);
        }
        return bytes.toByteArray();
    }

    private static void stored(ZipOutputStream zip, String name, byte[] data) throws IOException {
        ZipEntry e = new ZipEntry(name);
        e.setMethod(ZipEntry.STORED);
        e.setSize(data.length);
        e.setCompressedSize(data.length);
        CRC32 crc = new CRC32();
        crc.update(data);
        e.setCrc(crc.getValue());
        zip.putNextEntry(e);
        zip.write(data);
        zip.closeEntry();
    }

    /**
     * A torch.save zip of {@code count} F32 [2, 2] tensors {@code w0, w1, ...}, tensor i
     * holding i, i+1, i+2, i+3, each storage followed by {@code gap} bytes of padding storage
     * that no tensor uses, so the storages lie far apart and far from the directory.
     */
    static byte[] pth(int count, int gap) throws IOException {
        ByteArrayOutputStream pkl = new ByteArrayOutputStream();
        pkl.write(new byte[]{(byte) 0x80, 2}); // PROTO 2
        pkl.write('}'); // EMPTY_DICT
        for (int i = 0; i < count; i++) {
            unicode(pkl, "w" + i);
            global(pkl, "torch._utils", "_rebuild_tensor_v2");
            pkl.write('('); // MARK: the arguments
            pkl.write('('); // MARK: the persistent id
            unicode(pkl, "storage");
            global(pkl, "torch", "FloatStorage");
            unicode(pkl, Integer.toString(2 * i));
            unicode(pkl, "cpu");
            pkl.write(new byte[]{'K', 4}); // BININT1 numel
            pkl.write('t'); // TUPLE
            pkl.write('Q'); // BINPERSID
            pkl.write(new byte[]{'K', 0}); // storage offset
            pkl.write(new byte[]{'K', 2, 'K', 2, (byte) 0x86}); // size (2, 2): TUPLE2
            pkl.write(new byte[]{'K', 2, 'K', 1, (byte) 0x86}); // stride (2, 1)
            pkl.write((byte) 0x89); // NEWFALSE: requires_grad
            global(pkl, "collections", "OrderedDict");
            pkl.write(')'); // EMPTY_TUPLE
            pkl.write('R'); // REDUCE: backward hooks
            pkl.write('t'); // TUPLE
            pkl.write('R'); // REDUCE
            pkl.write('s'); // SETITEM
        }
        pkl.write('.'); // STOP
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ZipOutputStream zip = new ZipOutputStream(bytes)) {
            stored(zip, "archive/data.pkl", pkl.toByteArray());
            stored(zip, "archive/byteorder", "little".getBytes(StandardCharsets.US_ASCII));
            for (int i = 0; i < count; i++) {
                ByteBuffer v = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
                for (int k = 0; k < 4; k++) v.putFloat(i + k);
                stored(zip, "archive/data/" + (2 * i), v.array());
                stored(zip, "archive/data/" + (2 * i + 1), new byte[gap]);
            }
            stored(zip, "archive/version", "3\n".getBytes(StandardCharsets.US_ASCII));
        }
        return bytes.toByteArray();
    }

    private static void unicode(ByteArrayOutputStream out, String s) {
        byte[] u = s.getBytes(StandardCharsets.UTF_8);
        out.write('X'); // BINUNICODE: 4-byte little-endian length, UTF-8
        out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(u.length).array());
        out.writeBytes(u);
    }

    private static void global(ByteArrayOutputStream out, String module, String name) {
        out.write('c'); // GLOBAL: module and name, each ended by a newline
        out.writeBytes((module + "\n" + name + "\n").getBytes(StandardCharsets.US_ASCII));
    }
}
