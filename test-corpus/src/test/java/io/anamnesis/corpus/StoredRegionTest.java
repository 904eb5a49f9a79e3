package io.anamnesis.corpus;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.StoredRegion;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every reader's {@link TensorArchive#storedRegion}, on every input of the corpus: where it
 * names a region, the file's bytes there are exactly what {@link TensorArchive#data} gives
 * (which is what lets the writer copy such a tensor file to file), and every format names
 * regions for its plain tensors.
 */
class StoredRegionTest {
    @Test
    void aStoredRegionHoldsExactlyTheBytesDataGives() throws Exception {
        Optional<Path> root = CorpusCase.root();
        Assumptions.assumeTrue(root.isPresent(), "shared corpus not found: no inputs to check regions on");
        Anamnesis amn = Anamnesis.installed();
        Map<String, Integer> regions = new TreeMap<>();
        for (CorpusCase c : CorpusCase.all(root.get())) {
            Path in;
            try {
                in = c.input();
            } catch (IllegalStateException none) {
                continue;
            }
            if (!Files.isRegularFile(in)) continue;
            TensorArchive archive;
            try {
                archive = amn.open(in);
            } catch (RuntimeException refused) {
                continue; // the reject cases
            }
            try (archive; Arena arena = Arena.ofConfined()) {
                for (TensorEntry e : archive.tensors()) {
                    Optional<StoredRegion> r = archive.storedRegion(e);
                    if (r.isEmpty()) continue;
                    MemorySegment data = archive.data(e, arena);
                    ByteBuffer file = ByteBuffer.allocate(Math.toIntExact(e.byteSize()));
                    while (file.hasRemaining()) {
                        int n = r.get().file().read(file, r.get().offset() + file.position());
                        assertThat(n).as("%s %s: the region lies within the file", c.name(), e.name()).isPositive();
                    }
                    assertThat(file.array()).as("%s %s", c.name(), e.name()).isEqualTo(data.toArray(ValueLayout.JAVA_BYTE));
                    regions.merge(archive.format(), 1, Integer::sum);
                }
            }
        }
        assertThat(regions.keySet()).as("formats whose plain tensors have regions").contains("safetensors", "gguf", "npz", "pth");
    }
}
