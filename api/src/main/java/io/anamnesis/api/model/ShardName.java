package io.anamnesis.api.model;

import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code <prefix>-0000N-of-0000M.<ext>} names that transformers gives its shards
 * ({@code model-00001-of-00004.safetensors}, {@code pytorch_model-00001-of-00003.bin}) and
 * llama.cpp its GGUF splits ({@code llama_split_path}: {@code "%s-%05d-of-%05d.gguf"}).
 *
 * @param prefix    what comes before {@code -0000N}
 * @param number    N, 1-based
 * @param count     M
 * @param extension without the dot
 */
public record ShardName(String prefix, int number, int count, String extension) {
    private static final Pattern NAME = Pattern.compile("(.+)-(\\d{5,9})-of-(\\d{5,9})\\.([A-Za-z0-9]+)");

    /** The shard name of a file name, when it is one (N between 1 and M). */
    public static Optional<ShardName> parse(String fileName) {
        Matcher m = NAME.matcher(fileName);
        if (!m.matches()) return Optional.empty();
        int n = Integer.parseInt(m.group(2));
        int count = Integer.parseInt(m.group(3));
        if (n < 1 || n > count) return Optional.empty();
        return Optional.of(new ShardName(m.group(1), n, count, m.group(4)));
    }

    /** The file name of shard {@code n} (1-based) of {@code count}, five digits each as both tools write them. */
    public static String of(String prefix, int n, int count, String extension) {
        return String.format(java.util.Locale.ROOT, "%s-%05d-of-%05d.%s", prefix, n, count, extension);
    }

    /** The name of this shard's sibling {@code n}. */
    public String sibling(int n) {
        return of(prefix, n, count, extension);
    }
}
