package io.anamnesis.format.gguf;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.spi.FileProbe;
import io.anamnesis.api.spi.FormatReader;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Reads llama.cpp's legacy importance-matrix file (the {@code .dat} that {@code llama-imatrix}
 * wrote before its GGUF format, and still writes for a {@code .dat} name). Little-endian
 * int32 fields, as {@code load_legacy_imatrix} of llama.cpp's tools/quantize reads them:
 *
 * <pre>
 *   n_entries
 *   n_entries x { len, name[len], ncall, nval, float32 values[nval] }
 *   optional trailer: last_call, dataset_len, dataset[dataset_len]
 * </pre>
 *
 * Each entry becomes an F32 tensor {@code [nval]} under its name, holding the values as
 * stored (what the file's writer made of the sums; the reader does not interpret them). The
 * numbers beside them are string metadata: {@code ncall.<name>} per entry and, from the
 * trailer, {@code imatrix.chunk_count} (last_call) and {@code imatrix.datasets} (the dataset
 * name), the keys the GGUF imatrix format uses for the same facts.
 *
 * <p>The format has no magic, so the reader claims a file only by its {@code .dat} name and a
 * header that reads as one (a plausible entry count, a printable first name, sizes that fit
 * the file); it lists no extension, so detection never hands it other {@code .dat} files.
 */
public final class ImatrixDatReader implements FormatReader {
    /** Longest entry name the probe believes: tensor names are short. */
    static final int MAX_PROBED_NAME = 1024;

    @Override
    public String format() {
        return "imatrix";
    }

    @Override
    public List<String> fileExtensions() {
        return List.of();
    }

    @Override
    public String description() {
        return "llama.cpp legacy importance matrix (.dat of llama-imatrix); entries as F32 tensors";
    }

    @Override
    public boolean canRead(FileProbe probe) {
        if (!probe.extension().equals("dat")) return false;
        ByteBuffer b = probe.bytes();
        if (b.remaining() < 16) return false;
        long entries = Integer.toUnsignedLong(b.getInt());
        int len = b.getInt();
        if (entries < 1 || entries > Integer.MAX_VALUE || len < 1 || len > MAX_PROBED_NAME || b.remaining() < len + 8) {
            return false;
        }
        for (int i = 0; i < len; i++) {
            int c = b.get() & 0xFF;
            if (c < 0x20 || c == 0x7F) return false;
        }
        int ncall = b.getInt();
        int nval = b.getInt();
        if (nval < 1) return false;
        long first = 4L + 4 + len + 4 + 4 + 4L * nval;
        return ncall >= 0 && first <= probe.size();
    }

    @Override
    public TensorArchive open(Path path, ParseLimits limits) {
        FileChannel channel = null;
        try {
            channel = FileChannel.open(path, StandardOpenOption.READ);
            return parse(path, channel, limits);
        } catch (IOException e) {
            closeQuietly(channel);
            throw new TensorIOException("cannot read " + path + ": " + e.getMessage(), e);
        } catch (RuntimeException | Error e) {
            closeQuietly(channel);
            throw e;
        }
    }

    /** One entry: its name, ncall, and where its values are. */
    record Entry(String name, long ncall, long count, long offset) {
    }

    /** What the trailer of the latest legacy version says, when it is there. */
    record Trailer(long lastCall, String dataset) {
    }

    static ImatrixDatArchive parse(Path path, FileChannel channel, ParseLimits limits) throws IOException {
        Fields in = new Fields(channel, channel.size());
        long count = in.i32("the entry count");
        if (count < 1) throw new MalformedFileException("imatrix " + path.getFileName() + ": no entries (count " + count + ")");
        ParseLimits.check("imatrix entry count", count, limits.maxTensors());
        // The smallest entry: an empty name, ncall, nval and one value.
        if (count > in.left() / 16) {
            throw new MalformedFileException("imatrix declares " + count + " entries, more than its "
                    + in.size + " bytes can hold");
        }
        List<Entry> entries = new ArrayList<>((int) count);
        Set<String> names = new HashSet<>();
        for (long i = 0; i < count; i++) {
            long len = in.i32("the name length of entry " + (i + 1));
            if (len < 0) throw new MalformedFileException("imatrix entry " + (i + 1) + ": negative name length " + len);
            ParseLimits.check("imatrix entry name bytes", len, limits.maxStringBytes());
            String name = in.utf8((int) len, "the name of entry " + (i + 1));
            long ncall = in.i32("ncall of " + name);
            long nval = in.i32("the value count of " + name);
            if (nval < 1) throw MalformedFileException.inTensor(name, "imatrix entry holds " + nval + " values");
            if (nval > in.left() / 4) {
                throw MalformedFileException.inTensor(name, "imatrix entry declares " + nval
                        + " values, past the end of the file");
            }
            if (!names.add(name)) throw MalformedFileException.inTensor(name, "imatrix entry appears twice");
            entries.add(new Entry(name, ncall, nval, in.position));
            in.skip(4 * nval);
        }
        Optional<Trailer> trailer = Optional.empty();
        if (in.left() > 0) {
            long lastCall = in.i32("the trailer's chunk count");
            long len = in.i32("the trailer's dataset length");
            if (len < 0) throw new MalformedFileException("imatrix trailer: negative dataset length " + len);
            ParseLimits.check("imatrix dataset name bytes", len, limits.maxStringBytes());
            String dataset = in.utf8((int) len, "the dataset name");
            if (in.left() > 0) {
                throw new MalformedFileException("imatrix: " + in.left() + " bytes after the dataset name, which ends the format");
            }
            trailer = Optional.of(new Trailer(lastCall, dataset));
        }
        return new ImatrixDatArchive(path, channel, entries, trailer);
    }

    private static void closeQuietly(FileChannel c) {
        if (c == null) return;
        try {
            c.close();
        } catch (IOException ignored) {
            // the parse failure is what matters
        }
    }

    /** Little-endian fields read in order, each checked against the bytes the file has left. */
    private static final class Fields {
        private final FileChannel channel;
        final long size;
        long position;

        Fields(FileChannel channel, long size) {
            this.channel = channel;
            this.size = size;
        }

        long left() {
            return size - position;
        }

        private ByteBuffer read(int n, String what) throws IOException {
            if (n > left()) {
                throw new MalformedFileException("imatrix is truncated: " + what + " needs " + n
                        + " bytes at offset " + position + ", the file has " + left() + " left");
            }
            ByteBuffer b = ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
            while (b.hasRemaining()) {
                if (channel.read(b, position + b.position()) < 0) {
                    throw new MalformedFileException("imatrix is truncated at offset " + (position + b.position()));
                }
            }
            position += n;
            return b.flip();
        }

        /** A signed int32, as the file's writer declared its fields. */
        long i32(String what) throws IOException {
            return read(4, what).getInt();
        }

        String utf8(int n, String what) throws IOException {
            ByteBuffer b = read(n, what);
            try {
                return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT).decode(b).toString();
            } catch (CharacterCodingException e) {
                throw new MalformedFileException("imatrix: " + what + " is not valid UTF-8");
            }
        }

        void skip(long n) {
            if (n > left()) throw new MalformedFileException("imatrix is truncated: values run past the end of the file");
            position += n;
        }
    }
}
