package io.anamnesis.format.safetensors;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Builds safetensors files byte by byte for tests: an 8-byte little-endian length, a header, data. */
final class SafetensorsBytes {
    private SafetensorsBytes() {
    }

    /** The header JSON exactly as given (no padding), its length as prefix, then {@code data}. */
    static byte[] file(String headerJson, byte[] data) {
        return file(headerJson.getBytes(StandardCharsets.UTF_8), data);
    }

    static byte[] file(byte[] header, byte[] data) {
        return concat(prefix(header.length), header, data);
    }

    /** Any length field, for lying headers. */
    static byte[] prefix(long n) {
        byte[] p = new byte[8];
        for (int i = 0; i < 8; i++) p[i] = (byte) (n >>> (8 * i));
        return p;
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) out.writeBytes(p);
        return out.toByteArray();
    }

    static byte[] bytes(int... values) {
        byte[] b = new byte[values.length];
        for (int i = 0; i < values.length; i++) b[i] = (byte) values[i];
        return b;
    }

    static byte[] zeros(int n) {
        return new byte[n];
    }

    static Path write(Path dir, String name, byte[] content) {
        try {
            return Files.write(dir.resolve(name), content);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Path write(Path dir, byte[] content) {
        return write(dir, "model.safetensors", content);
    }

    /** One tensor's header entry: {@code "name":{"dtype":..,"shape":[..],"data_offsets":[b,e]}}. */
    static String entry(String name, String dtype, String shape, long begin, long end) {
        return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape
                + ",\"data_offsets\":[" + begin + "," + end + "]}";
    }
}
