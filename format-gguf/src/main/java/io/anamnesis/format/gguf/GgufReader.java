package io.anamnesis.format.gguf;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.spi.FileProbe;
import io.anamnesis.api.spi.HeaderStream;
import io.anamnesis.api.spi.FormatReader;
import io.anamnesis.api.spi.RangeChannel;
import io.anamnesis.api.spi.ShardPosition;

import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/** Reads GGUF files (v1 to v3, little- and big-endian): header parsed once, tensor data mapped per tensor. */
public final class GgufReader implements FormatReader {

    @Override
    public String format() {
        return "gguf";
    }

    @Override
    public List<String> fileExtensions() {
        return List.of("gguf");
    }

    @Override
    public String description() {
        return "GGUF v1-v3 (llama.cpp/ggml), either byte order, every ggml tensor type";
    }

    @Override
    public boolean canRead(FileProbe probe) {
        return probe.startsWith((byte) 'G', (byte) 'G', (byte) 'U', (byte) 'F');
    }

    @Override
    public TensorArchive open(Path path, ParseLimits limits) {
        FileChannel channel = null;
        try {
            channel = FileChannel.open(path, StandardOpenOption.READ);
            GgufHeader header = GgufParser.parse(channel, channel.size(), limits);
            return new GgufArchive(path, channel, header);
        } catch (IOException e) {
            closeQuietly(channel);
            throw new TensorIOException("cannot read " + path + ": " + e.getClass().getSimpleName()
                    + (e.getMessage() == null ? "" : " " + e.getMessage()), e);
        } catch (RuntimeException | Error e) {
            closeQuietly(channel);
            throw e;
        }
    }

    /**
     * The header from a stream, read up to its last tensor info and no further; the archive
     * has the typed key/values and the tensor index, and no tensor data. Data offsets cannot
     * be checked against a length the stream does not have.
     */
    @Override
    public TensorArchive openHeader(InputStream in, ParseLimits limits) {
        HeaderStream channel = new HeaderStream(in);
        try {
            return new GgufArchive(null, channel, GgufParser.parse(channel, channel.size(), limits));
        } catch (IOException e) {
            throw new TensorIOException("cannot read the GGUF header from the stream: " + e.getMessage(), e);
        }
    }

    /**
     * The header of a file read by range requests, parsed as a local file's (tensor data
     * offsets checked against the file's size): the parser walks forward, so the channel's
     * growing readahead fetches the key/values and tensor infos in a few ranges.
     */
    @Override
    public TensorArchive openHeader(RangeChannel channel, ParseLimits limits) {
        try {
            return new GgufArchive(null, channel, GgufParser.parse(channel, channel.size(), limits));
        } catch (IOException e) {
            throw new TensorIOException("cannot read " + channel.fileName() + ": " + e.getMessage(), e);
        }
    }

    /** llama.cpp's split keys ({@code LLM_KV_SPLIT_*}), which {@code gguf-split} writes in every split. */
    static final String SPLIT_NO = "split.no";
    static final String SPLIT_COUNT = "split.count";
    static final String SPLIT_TENSORS_COUNT = "split.tensors.count";

    /**
     * A split's place as its keys say: {@code split.no} (0-based) of {@code split.count}, the
     * model's {@code split.tensors.count}. Empty for a file without them; a file that is
     * split 1 of 1 is a whole model too.
     *
     * @throws MalformedFileException when the keys are not integers or contradict each other
     */
    @Override
    public Optional<ShardPosition> shardPosition(TensorArchive opened) {
        if (!(opened instanceof GgufArchive g)) return Optional.empty();
        var kv = g.header().metadata();
        if (!kv.containsKey(SPLIT_COUNT) && !kv.containsKey(SPLIT_NO)) return Optional.empty();
        long no = integer(kv.get(SPLIT_NO), SPLIT_NO, g);
        long count = integer(kv.get(SPLIT_COUNT), SPLIT_COUNT, g);
        OptionalLong total = kv.containsKey(SPLIT_TENSORS_COUNT)
                ? OptionalLong.of(integer(kv.get(SPLIT_TENSORS_COUNT), SPLIT_TENSORS_COUNT, g)) : OptionalLong.empty();
        if (count < 1 || no < 0 || no >= count || count > Integer.MAX_VALUE) {
            throw new MalformedFileException(name(g) + ": " + SPLIT_NO + " " + no + " and " + SPLIT_COUNT + " " + count
                    + " name no split of the model");
        }
        return Optional.of(new ShardPosition((int) no, (int) count, total));
    }

    private static long integer(GgufValue v, String key, GgufArchive g) {
        if (v == null) throw new MalformedFileException(name(g) + " has split keys but no " + key);
        if (!v.type().isInteger()) {
            throw new MalformedFileException(name(g) + ": " + key + " is a " + v.type() + ", not an integer");
        }
        return (Long) v.value();
    }

    private static String name(GgufArchive g) {
        return g.path().map(p -> String.valueOf(p.getFileName())).orElse("the GGUF file");
    }

    /** Parses a header alone, without keeping the file open. */
    public static GgufHeader readHeader(Path path, ParseLimits limits) {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            return GgufParser.parse(channel, channel.size(), limits);
        } catch (IOException e) {
            throw new TensorIOException("cannot read " + path + ": " + e.getMessage(), e);
        }
    }

    private static void closeQuietly(FileChannel c) {
        if (c == null) return;
        try {
            c.close();
        } catch (IOException ignored) {
            // the parse failure is what matters
        }
    }
}
