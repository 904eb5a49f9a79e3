package io.anamnesis.format.gguf;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The legacy imatrix layout as llama.cpp's load_legacy_imatrix reads it: int32 entry count;
 * per entry int32 name length, the name, int32 ncall, int32 value count, float32 values; an
 * optional trailer of int32 last_call, int32 dataset length and the dataset name.
 */
class ImatrixDatReaderTest {
    @TempDir
    Path dir;

    /** Little-endian int32/float32/bytes, as llama-imatrix writes them. */
    static final class Dat {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();

        Dat i32(int v) {
            out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array());
            return this;
        }

        Dat f32(float... v) {
            for (float x : v) out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(x).array());
            return this;
        }

        Dat str(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            i32(b.length);
            out.writeBytes(b);
            return this;
        }

        Dat entry(String name, int ncall, float... values) {
            return str(name).i32(ncall).i32(values.length).f32(values);
        }

        Path write(Path dir, String name) throws IOException {
            return Files.write(dir.resolve(name), out.toByteArray());
        }
    }

    static Dat twoEntries() {
        return new Dat().i32(2).entry("blk.0.attn_q.weight", 10, 1, 2, 3, 4).entry("weight", 1, 0.5f);
    }

    @Test
    void readsEveryEntryAsAnF32TensorWithItsNcallAndTheTrailer() throws IOException {
        Path f = twoEntries().i32(7).str("wiki.train.raw").write(dir, "imatrix.dat");
        try (TensorArchive a = new ImatrixDatReader().open(f, ParseLimits.defaults()); Arena arena = Arena.ofConfined()) {
            assertThat(a.format()).isEqualTo("imatrix");
            assertThat(a.tensors()).containsExactly(TensorEntry.of("blk.0.attn_q.weight", DType.F32, Shape.of(4)),
                    TensorEntry.of("weight", DType.F32, Shape.of(1)));
            float[] v = a.data(a.tensors().getFirst(), arena).toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
            assertThat(v).containsExactly(1, 2, 3, 4);
            assertThat(a.structuredMetadata()).containsEntry("ncall.blk.0.attn_q.weight", 10L).containsEntry("ncall.weight", 1L)
                    .containsEntry("imatrix.chunk_count", 7L).containsEntry("imatrix.datasets", List.of("wiki.train.raw"));
            assertThat(a.metadata()).containsEntry("imatrix.datasets", "wiki.train.raw");
        }
    }

    @Test
    void aFileWithoutTheTrailerHasNoChunkCount() throws IOException {
        try (TensorArchive a = new ImatrixDatReader().open(twoEntries().write(dir, "i.dat"), ParseLimits.defaults())) {
            assertThat(a.structuredMetadata()).doesNotContainKey("imatrix.chunk_count").doesNotContainKey("imatrix.datasets");
        }
    }

    @Test
    void detectionClaimsOnlyPlausibleDatFiles() throws IOException {
        Anamnesis amn = Anamnesis.of(List.of(new GgufReader(), new ImatrixDatReader()), List.of(), List.of());
        Path imatrix = twoEntries().write(dir, "imatrix.dat");
        assertThat(amn.detect(imatrix)).isInstanceOf(ImatrixDatReader.class);
        // the same bytes under another name, and another .dat, are not claimed
        Path renamed = twoEntries().write(dir, "imatrix.bin");
        assertThatThrownBy(() -> amn.detect(renamed)).isInstanceOf(UnsupportedFeatureException.class);
        Path other = Files.writeString(dir.resolve("game.dat"), "SAVEGAME version 3, level 12, lives 2 ....");
        assertThatThrownBy(() -> amn.detect(other)).isInstanceOf(UnsupportedFeatureException.class);
        // a count that promises more values than the file holds
        Path lying = new Dat().i32(1).str("w").i32(1).i32(1000).f32(1).write(dir, "lying.dat");
        assertThatThrownBy(() -> amn.detect(lying)).isInstanceOf(UnsupportedFeatureException.class);
    }

    @Test
    void truncatedDuplicatedOrTrailingDataIsMalformed() throws IOException {
        byte[] whole = twoEntries().out.toByteArray();
        Path cut = Files.write(dir.resolve("cut.dat"), java.util.Arrays.copyOf(whole, whole.length - 2));
        assertThatThrownBy(() -> new ImatrixDatReader().open(cut, ParseLimits.defaults()))
                .isInstanceOf(MalformedFileException.class);
        Path twice = new Dat().i32(2).entry("w", 1, 1).entry("w", 1, 2).write(dir, "twice.dat");
        assertThatThrownBy(() -> new ImatrixDatReader().open(twice, ParseLimits.defaults()))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("'w'").hasMessageContaining("twice");
        Path junk = twoEntries().i32(1).str("d").i32(9).write(dir, "junk.dat");
        assertThatThrownBy(() -> new ImatrixDatReader().open(junk, ParseLimits.defaults()))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("after the dataset name");
        Path none = new Dat().i32(0).write(dir, "none.dat");
        assertThatThrownBy(() -> new ImatrixDatReader().open(none, ParseLimits.defaults()))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("no entries");
        Path empty = new Dat().i32(1).str("w").i32(1).i32(0).i32(0).write(dir, "empty.dat");
        assertThatThrownBy(() -> new ImatrixDatReader().open(empty, ParseLimits.defaults()))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("0 values");
    }
}
