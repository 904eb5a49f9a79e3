package io.anamnesis.format.safetensors;

import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.TensorIOException;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import static io.anamnesis.format.safetensors.SafetensorsBytes.bytes;
import static io.anamnesis.format.safetensors.SafetensorsBytes.concat;
import static io.anamnesis.format.safetensors.SafetensorsBytes.entry;
import static io.anamnesis.format.safetensors.SafetensorsBytes.file;
import static io.anamnesis.format.safetensors.SafetensorsBytes.prefix;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SafetensorsHeaderTest {

    /** Counts every byte handed out, by read() and read(byte[], ...) alike. */
    static final class CountingStream extends FilterInputStream {
        long count;

        CountingStream(InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            int b = super.read();
            if (b >= 0) count++;
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = super.read(b, off, len);
            if (n > 0) count += n;
            return n;
        }

        @Override
        public long skip(long n) throws IOException {
            long s = super.skip(n);
            count += s;
            return s;
        }
    }

    @Test
    void readsOnlyThePrefixAndTheHeaderFromAStream() throws IOException {
        String header = "{\"__metadata__\":{\"format\":\"pt\"}," + entry("b", "F16", "[2]", 4, 8) + ","
                + entry("a", "U8", "[4]", 0, 4) + "}  ";
        byte[] data = bytes(10, 11, 12, 13, 0x00, 0x3C, 0x00, 0xC0);
        CountingStream in = new CountingStream(new ByteArrayInputStream(file(header, data)));

        SafetensorsHeader h = SafetensorsHeader.read(in);

        long n = header.getBytes(StandardCharsets.UTF_8).length;
        assertThat(in.count).isEqualTo(8 + n);
        assertThat(in.read()).as("the first data byte is still in the stream").isEqualTo(10);
        assertThat(h.headerLength()).isEqualTo(n);
        assertThat(h.dataStart()).isEqualTo(8 + n);
        assertThat(h.dataBytes()).isEqualTo(8);
        assertThat(h.fileSize()).isEqualTo(8 + n + 8);
        assertThat(h.metadata()).containsExactly(Map.entry("format", "pt"));
        assertThat(h.tensors()).containsExactly(
                new SafetensorsHeader.Tensor(new TensorEntry("a", DType.U8, Shape.of(4), 4), 0, 4),
                new SafetensorsHeader.Tensor(new TensorEntry("b", DType.F16, Shape.of(2), 4), 4, 8));
        assertThat(h.tensor("b").orElseThrow().begin()).isEqualTo(4);
    }

    @Test
    void needsNoDataBytesAtAll() {
        // A range request for the first 8 + N bytes: no data follows, and none is needed.
        String header = "{" + entry("w", "F32", "[1000000]", 0, 4_000_000) + "}";
        SafetensorsHeader h = SafetensorsHeader.read(new ByteArrayInputStream(file(header, new byte[0])));
        assertThat(h.dataBytes()).isEqualTo(4_000_000);
        assertThat(h.tensors().getFirst().entry().shape()).isEqualTo(Shape.of(1_000_000));
    }

    @Test
    void checksTheLengthAgainstTheLimitAfterReadingOnlyThePrefix() {
        CountingStream in = new CountingStream(new ByteArrayInputStream(concat(prefix(200_000_000L), bytes('{', '}'))));
        assertThatThrownBy(() -> SafetensorsHeader.read(in)).isInstanceOf(LimitExceededException.class);
        assertThat(in.count).isEqualTo(8);
        assertThatThrownBy(() -> SafetensorsHeader.read(new ByteArrayInputStream(file("{}      ", new byte[0])),
                ParseLimits.defaults().withMaxHeaderBytes(4))).isInstanceOf(LimitExceededException.class);
    }

    @Test
    void rejectsAShortStream() {
        assertThatThrownBy(() -> SafetensorsHeader.read(new ByteArrayInputStream(bytes(8, 0, 0))))
                .isInstanceOf(MalformedFileException.class);
        assertThatThrownBy(() -> SafetensorsHeader.read(new ByteArrayInputStream(concat(prefix(64), bytes('{', '}')))))
                .isInstanceOf(MalformedFileException.class);
    }

    @Test
    void validatesWhatNeedsNoFileSize() {
        String overlap = "{" + entry("a", "F32", "[4]", 0, 16) + "," + entry("b", "F32", "[4]", 8, 24) + "}";
        assertThatThrownBy(() -> SafetensorsHeader.read(new ByteArrayInputStream(file(overlap, new byte[0]))))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("'b'");
        String gap = "{" + entry("a", "F32", "[1]", 4, 8) + "}";
        assertThatThrownBy(() -> SafetensorsHeader.read(new ByteArrayInputStream(file(gap, new byte[0]))))
                .isInstanceOf(MalformedFileException.class);
        String overflow = "{" + entry("w", "F32", "[4294967296,4294967296]", 0, 16) + "}";
        assertThatThrownBy(() -> SafetensorsHeader.read(new ByteArrayInputStream(file(overflow, new byte[0]))))
                .isInstanceOf(LimitExceededException.class);
    }

    @Test
    void reportsAFailingStreamAsAnIoError() {
        InputStream broken = new InputStream() {
            @Override
            public int read() throws IOException {
                throw new IOException("connection reset");
            }
        };
        assertThatThrownBy(() -> SafetensorsHeader.read(broken)).isInstanceOf(TensorIOException.class)
                .hasMessageContaining("connection reset");
    }

    @Test
    void parsesALargeHeaderWhole() {
        // 100k tensors, a header of about 9 MB, like the index of a very large checkpoint.
        // Its speed is SafetensorsBench's to measure; this checks every entry came through.
        int count = 100_000;
        StringBuilder sb = new StringBuilder("{");
        for (int i = 0; i < count; i++) {
            if (i > 0) sb.append(',');
            sb.append(entry("model.layers." + i + ".weight", "BF16", "[2,2]", 8L * i, 8L * i + 8));
        }
        sb.append('}');
        SafetensorsHeader h = SafetensorsHeader.read(new ByteArrayInputStream(file(sb.toString(), new byte[0])));
        assertThat(h.tensors()).hasSize(count);
        assertThat(h.dataBytes()).isEqualTo(8L * count);
        assertThat(h.tensors().get(count - 1).name()).isEqualTo("model.layers." + (count - 1) + ".weight");
    }
}
