package io.anamnesis.api.spi;

import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.TensorIOException;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The fetch pattern of {@link RangeChannel} over a source that records what it is asked. */
class RangeChannelTest {
    /** A file whose byte i is (i * 31 + 7) mod 256, so any misplaced byte shows. */
    static byte[] file(int size) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i++) b[i] = (byte) (i * 31 + 7);
        return b;
    }

    record Fetch(long offset, int length) {
    }

    static final class Recording implements RangeChannel.Source {
        final byte[] file;
        final List<Fetch> fetches = new ArrayList<>();
        int shortBy;

        Recording(byte[] file) {
            this.file = file;
        }

        @Override
        public byte[] fetch(long offset, int length) {
            fetches.add(new Fetch(offset, length));
            return Arrays.copyOfRange(file, (int) offset, (int) offset + length - shortBy);
        }
    }

    static RangeChannel channel(Recording source, int head, long budget) {
        return new RangeChannel("f.bin", source.file.length, Arrays.copyOf(source.file, head), source, budget);
    }

    static byte[] read(FileChannel ch, long at, int n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n);
        while (b.hasRemaining()) {
            if (ch.read(b, at + b.position()) < 0) break;
        }
        return Arrays.copyOf(b.array(), b.position());
    }

    @Test
    void aForwardWalkFetchesRunsThatGrowFourfold() throws IOException {
        Recording src = new Recording(file(1 << 20));
        RangeChannel ch = channel(src, 1000, Long.MAX_VALUE);
        // a parser reading 100 bytes at a time from the start
        for (int at = 0; at < 21_000; at += 100) {
            assertThat(read(ch, at, 100)).isEqualTo(Arrays.copyOfRange(src.file, at, at + 100));
        }
        // held 1,000, then +3,000 (4,000 held), +12,000 (16,000), +48,000 (64,000)
        assertThat(src.fetches).containsExactly(new Fetch(1000, 3000), new Fetch(4000, 12_000), new Fetch(16_000, 48_000));
        assertThat(ch.fetches()).isEqualTo(3);
        assertThat(ch.bytesHeld()).isEqualTo(64_000);
    }

    @Test
    void aReadLargerThanTheReadaheadIsFetchedAsAsked() throws IOException {
        Recording src = new Recording(file(1 << 20));
        RangeChannel ch = channel(src, 1000, Long.MAX_VALUE);
        assertThat(read(ch, 8, 500_000)).isEqualTo(Arrays.copyOfRange(src.file, 8, 500_008));
        assertThat(src.fetches).containsExactly(new Fetch(1000, 499_008));
    }

    @Test
    void readsAwayFromTheHeldBytesFetchAMinimumAndTheTailWhole() throws IOException {
        int size = 4 << 20;
        Recording src = new Recording(file(size));
        RangeChannel ch = channel(src, 1000, Long.MAX_VALUE);
        // the end of a zip: the whole tail in one fetch, then reads inside it cost nothing
        assertThat(read(ch, size - 22, 22)).isEqualTo(Arrays.copyOfRange(src.file, size - 22, size));
        assertThat(read(ch, size - RangeChannel.TAIL_BYTES + 5, 1000))
                .isEqualTo(Arrays.copyOfRange(src.file, size - RangeChannel.TAIL_BYTES + 5, size - RangeChannel.TAIL_BYTES + 1005));
        // a member's header in the middle: at least MIN_FETCH, served from it afterwards
        assertThat(read(ch, 2_000_000, 30)).isEqualTo(Arrays.copyOfRange(src.file, 2_000_000, 2_000_030));
        assertThat(read(ch, 2_000_030, 100)).isEqualTo(Arrays.copyOfRange(src.file, 2_000_030, 2_000_130));
        assertThat(src.fetches).containsExactly(new Fetch(size - RangeChannel.TAIL_BYTES, RangeChannel.TAIL_BYTES),
                new Fetch(2_000_000, RangeChannel.MIN_FETCH));
        // a read spanning held and missing bytes fetches only the gap
        assertThat(read(ch, 900, 200)).isEqualTo(Arrays.copyOfRange(src.file, 900, 1100));
        assertThat(src.fetches.getLast().offset()).isEqualTo(1000);
    }

    @Test
    void theBudgetBoundsWhatIsHeld() throws IOException {
        Recording src = new Recording(file(1 << 20));
        RangeChannel ch = channel(src, 1000, 10_000);
        // readahead would take 3,000 more; near the budget only the bytes asked for are fetched
        assertThat(read(ch, 1000, 100)).hasSize(100);
        assertThat(read(ch, 4000, 5000)).hasSize(5000);
        assertThat(ch.bytesHeld()).isLessThanOrEqualTo(10_000);
        assertThatThrownBy(() -> read(ch, 9000, 2000)).isInstanceOf(LimitExceededException.class)
                .hasMessageContaining("f.bin").hasMessageContaining("10000");
    }

    @Test
    void aShortAnswerIsATypedError() {
        Recording src = new Recording(file(1 << 20));
        src.shortBy = 1;
        RangeChannel ch = channel(src, 1000, Long.MAX_VALUE);
        assertThatThrownBy(() -> read(ch, 1000, 10)).isInstanceOf(TensorIOException.class).hasMessageContaining("asked for");
    }

    @Test
    void afterTheHeadersNothingMoreIsReadOrMapped() throws IOException {
        Recording src = new Recording(file(1 << 16));
        RangeChannel ch = channel(src, 1000, Long.MAX_VALUE);
        assertThatThrownBy(() -> ch.map(FileChannel.MapMode.READ_ONLY, 0, 10, Arena.ofAuto())).isInstanceOf(IOException.class)
                .hasMessageContaining("cannot be mapped");
        ch.headersRead();
        assertThatThrownBy(() -> read(ch, 0, 10)).isInstanceOf(IOException.class).hasMessageContaining("headers alone");
        assertThatThrownBy(() -> ch.map(FileChannel.MapMode.READ_ONLY, 0, 10, Arena.ofAuto())).isInstanceOf(IOException.class)
                .hasMessageContaining("headers alone");
        assertThat(src.fetches).isEmpty();
    }

    @Test
    void theStreamReadsTheFileFromTheStartAndStopsAtItsEnd() throws IOException {
        Recording src = new Recording(file(50_000));
        RangeChannel ch = channel(src, 1000, Long.MAX_VALUE);
        var in = ch.stream();
        assertThat(in.readNBytes(8)).isEqualTo(Arrays.copyOf(src.file, 8));
        assertThat(in.skip(992)).isEqualTo(992);
        assertThat(in.readNBytes(100_000)).isEqualTo(Arrays.copyOfRange(src.file, 1000, 50_000));
        assertThat(in.read()).isEqualTo(-1);
        // the rest asked for in one read: one fetch
        assertThat(src.fetches).containsExactly(new Fetch(1000, 49_000));
    }
}
