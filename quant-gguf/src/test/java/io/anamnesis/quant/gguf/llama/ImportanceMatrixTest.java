package io.anamnesis.quant.gguf.llama;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.Shape;
import io.anamnesis.quant.gguf.TestArchive;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ImportanceMatrixTest {

    /** llama-imatrix's GGUF: two experts of 4 columns; the second got no input (count 0). */
    static TestArchive gguf() {
        return new TestArchive("gguf", Path.of("data", "imatrix.gguf"))
                .meta("imatrix.datasets", List.of("wiki.train", "other")).meta("imatrix.chunk_count", 3L)
                .meta("imatrix.chunk_size", 512L)
                .f32("blk.0.ffn_up_exps.weight.in_sum2", Shape.of(2, 4), 2, 4, 6, 3, 9, 9, 9, 9)
                .f32("blk.0.ffn_up_exps.weight.counts", Shape.of(2, 1), 2, 0)
                .f32("blk.0.attn_q.weight.counts", Shape.of(1, 1), 1024)
                .f32("blk.0.attn_q.weight.in_sum2", Shape.of(1, 2), 1, 3)
                .f32("unrelated", Shape.of(1), 5);
    }

    @Test
    void ggufValuesAreSumsOverCountsAndOneWhereNothingWasCounted() {
        ImportanceMatrix m = ImportanceMatrix.of(gguf());
        assertThat(m.entryCount()).isEqualTo(2);
        // 2/2, 4/2, 6/2, 3/2 in float32; the uncounted expert's row is all 1
        assertThat(m.values("blk.0.ffn_up_exps.weight")).containsExactly(1f, 2f, 3f, 1.5f, 1f, 1f, 1f, 1f);
        assertThat(m.values("blk.0.attn_q.weight")).containsExactly(1f / 1024, 3f / 1024);
        assertThat(m.size("blk.0.ffn_up_exps.weight")).isEqualTo(8);
        assertThat(m.dataset()).contains("wiki.train");
        assertThat(m.chunks()).isEqualTo(3);
        assertThat(m.file()).isEqualTo(Path.of("data", "imatrix.gguf").toString());
        assertThat(m.has("unrelated")).isFalse();
    }

    @Test
    void legacyValuesAreDividedByNcall() {
        TestArchive dat = new TestArchive("imatrix", Path.of("i.dat"))
                .f32("w", Shape.of(3), 3, 6, 7).meta("ncall.w", 3L)
                .f32("v", Shape.of(1), 5).meta("ncall.v", 0L);
        ImportanceMatrix m = ImportanceMatrix.of(dat);
        assertThat(m.values("w")).containsExactly(1f, 2f, 7f / 3);
        assertThat(m.values("v")).containsExactly(5f); // ncall 0: as stored
        assertThat(m.dataset()).isEmpty();
        assertThat(m.chunks()).isZero();
    }

    @Test
    void aFileThatIsNoImportanceMatrixIsMalformed() {
        assertThatThrownBy(() -> ImportanceMatrix.of(new TestArchive("gguf").f32("x", Shape.of(1), 1)))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("missing imatrix metadata");
        assertThatThrownBy(() -> ImportanceMatrix.of(new TestArchive("safetensors").f32("x", Shape.of(1), 1)))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("not an importance matrix");
        TestArchive unpaired = new TestArchive("gguf").meta("imatrix.datasets", List.of()).meta("imatrix.chunk_count", 1L)
                .meta("imatrix.chunk_size", 1L).f32("a.in_sum2", Shape.of(1, 1), 1);
        assertThatThrownBy(() -> ImportanceMatrix.of(unpaired)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("'a'").hasMessageContaining("no counts");
    }

    @Test
    void aNonFiniteValueIsRefusedNamingTheEntry() {
        TestArchive dat = new TestArchive("imatrix").f32("w", Shape.of(2), 1, Float.NaN).meta("ncall.w", 1L);
        assertThatThrownBy(() -> ImportanceMatrix.of(dat).requireFinite()).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("'w'");
    }

    /** The check divides as values() does: a finite sum over a tiny count that overflows is refused too. */
    @Test
    void aValueThatOverflowsWhenDividedByItsCountIsRefused() {
        TestArchive g = new TestArchive("gguf").meta("imatrix.datasets", List.of()).meta("imatrix.chunk_count", 1L)
                .meta("imatrix.chunk_size", 1L)
                .f32("w.in_sum2", Shape.of(1, 2), 1, 3e38f).f32("w.counts", Shape.of(1, 1), 0.5f);
        ImportanceMatrix m = ImportanceMatrix.of(g);
        assertThat(m.values("w")[1]).isInfinite();
        assertThatThrownBy(m::requireFinite).isInstanceOf(MalformedFileException.class).hasMessageContaining("'w'")
                .hasMessageContaining("value 1 is Infinity");
    }

    @Test
    void keyStringsAreCutAt127BytesWithoutSplittingACharacter() {
        String s = "a".repeat(126) + "\u00e9xyz"; // the é takes bytes 127 and 128
        assertThat(ImportanceMatrix.cut(s)).isEqualTo("a".repeat(126));
        assertThat(ImportanceMatrix.cut("short")).isEqualTo("short");
    }
}
