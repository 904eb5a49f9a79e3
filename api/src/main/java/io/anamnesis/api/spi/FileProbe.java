package io.anamnesis.api.spi;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Locale;

/**
 * What detection shows a {@link FormatReader}: the file's name, size and first bytes. A
 * probe is cheap and never consumes anything.
 *
 * @param fileName name of the file (no directory), for extension checks
 * @param size     file size in bytes
 * @param head     up to {@link #HEAD_BYTES} first bytes, read-only, little-endian order
 */
public record FileProbe(String fileName, long size, ByteBuffer head) {
    /** How many leading bytes detection reads. */
    public static final int HEAD_BYTES = 4096;

    public FileProbe {
        head = head.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
    }

    /** The bytes of {@code head}, as a fresh read-only buffer positioned at 0. */
    public ByteBuffer bytes() {
        return head.duplicate().order(ByteOrder.LITTLE_ENDIAN).rewind();
    }

    /** True when the file starts with these bytes. */
    public boolean startsWith(byte... magic) {
        if (head.limit() < magic.length) return false;
        for (int i = 0; i < magic.length; i++) {
            if (head.get(i) != magic[i]) return false;
        }
        return true;
    }

    /** The lower-case extension without the dot, or "" when there is none. */
    public String extension() {
        int dot = fileName.lastIndexOf('.');
        return dot < 0 ? "" : fileName.substring(dot + 1).toLowerCase(Locale.ROOT);
    }
}
