package io.anamnesis.api.spi.examples;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.spi.FileProbe;
import io.anamnesis.api.spi.FormatReader;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The api's package documentation shows this class: a whole {@code FormatReader} for a toy
 * format, {@code RAWF32\0\0}, a little-endian u64 count, then that many F32 values, read as
 * one tensor named {@code values}. {@link ExamplesTest} runs it.
 */
// @start region="example"
public final class RawF32Reader implements FormatReader {
    static final byte[] MAGIC = {'R', 'A', 'W', 'F', '3', '2', 0, 0};

    @Override public String format() { return "rawf32"; }
    @Override public List<String> fileExtensions() { return List.of("rawf32"); }
    @Override public String description() { return "a magic, a count, and that many F32 values"; }

    @Override
    public boolean canRead(FileProbe probe) {
        return probe.startsWith(MAGIC);           // the magic decides; the extension never does
    }

    @Override
    public TensorArchive open(Path path, ParseLimits limits) {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            ByteBuffer head = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
            while (head.hasRemaining() && ch.read(head) >= 0) { }
            long count = head.position() < 16 ? -1 : head.getLong(8);
            // every size a file declares is checked against the file before it is used
            if (count < 0 || count > (ch.size() - 16) / 4) {
                throw new MalformedFileException(path.getFileName() + ": the count does not fit the file");
            }
            return new Archive(path, TensorEntry.of("values", DType.F32, Shape.of(count)));
        } catch (IOException e) {
            throw new TensorIOException("cannot read " + path + ": " + e.getMessage(), e);
        }
    }

    /** The header is parsed; the values are mapped only when asked for. */
    private record Archive(Path file, TensorEntry values) implements TensorArchive {
        @Override public String format() { return "rawf32"; }
        @Override public Optional<Path> path() { return Optional.of(file); }
        @Override public Map<String, String> metadata() { return Map.of(); }
        @Override public Map<String, String> properties() { return Map.of("layout", "magic, u64 count, F32 values"); }
        @Override public List<TensorEntry> tensors() { return List.of(values); }

        @Override
        public MemorySegment data(TensorEntry entry, Arena arena) {
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
                return ch.map(FileChannel.MapMode.READ_ONLY, 16, entry.byteSize(), arena);
            } catch (IOException e) {
                throw new TensorIOException("cannot map " + file + ": " + e.getMessage(), e);
            }
        }

        @Override public void close() { }
    }
}
// @end
