package io.anamnesis.api.model;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Sizes as people write them for shard limits: transformers' {@code max_shard_size}
 * ({@code 500MB}, {@code 5GB} decimal, {@code 4GiB} binary, or a plain number of bytes) and
 * llama.cpp's {@code gguf-split --split-max-size} ({@code 128M}, {@code 4G}, decimal).
 */
public final class ByteSize {
    private static final Pattern SIZE = Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*([A-Za-z]*)");

    private ByteSize() {
    }

    /**
     * Bytes of a size: {@code B}, {@code K}/{@code KB}, {@code M}/{@code MB}, {@code G}/{@code GB},
     * {@code T}/{@code TB} are powers of 1000; {@code KiB}, {@code MiB}, {@code GiB}, {@code TiB}
     * powers of 1024; units in any case.
     *
     * @throws IllegalArgumentException saying what is accepted, for anything else or a size below one byte
     */
    public static long parse(String text) {
        Matcher m = SIZE.matcher(text.strip());
        if (!m.matches()) throw bad(text);
        long unit = switch (m.group(2).toUpperCase(Locale.ROOT)) {
            case "", "B" -> 1L;
            case "K", "KB" -> 1_000L;
            case "M", "MB" -> 1_000_000L;
            case "G", "GB" -> 1_000_000_000L;
            case "T", "TB" -> 1_000_000_000_000L;
            case "KIB" -> 1L << 10;
            case "MIB" -> 1L << 20;
            case "GIB" -> 1L << 30;
            case "TIB" -> 1L << 40;
            default -> throw bad(text);
        };
        java.math.BigDecimal bytes = new java.math.BigDecimal(m.group(1)).multiply(java.math.BigDecimal.valueOf(unit));
        if (bytes.compareTo(java.math.BigDecimal.ONE) < 0 || bytes.compareTo(java.math.BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
            throw bad(text);
        }
        return bytes.longValue();
    }

    private static IllegalArgumentException bad(String text) {
        return new IllegalArgumentException("'" + text + "' is not a size: write bytes, or a number with a unit:"
                + " KB, MB, GB, TB (powers of 1000, as transformers' max_shard_size; K, M, G, T too, as gguf-split)"
                + " or KiB, MiB, GiB, TiB (powers of 1024), e.g. 5GB or 500MB");
    }
}
