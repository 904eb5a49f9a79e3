package io.anamnesis.api;

import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.spi.RecoveryKernel;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A file with 200 000 tensors is valid (and cheap to make hostile): planning it must cost
 * work in proportion to the tensor count, not its square. Counted, not timed: the archive's
 * tensor list counts every element it hands out, so a planner that walks the list once per
 * tensor (directly, or through {@link TensorArchive#tensor}) reads 4e10 entries instead of a
 * few times 2e5, and the count says so on any machine, loaded or not.
 */
class PlanScaleTest {
    static final int N = 200_000;
    /** Entries a linear planner may read per tensor: a handful of passes over the list. */
    static final long READS_PER_TENSOR = 16;

    /** Claims every {@code <i>.q} alone, walking the tensor list once. */
    static final class ClaimsEveryQ implements Dequantizer {
        @Override
        public String scheme() {
            return "every-q";
        }

        @Override
        public String description() {
            return "claims *.q";
        }

        @Override
        public List<Recovery> claim(ClaimContext ctx) {
            List<Recovery> out = new ArrayList<>();
            RecoveryKernel kernel = new RecoveryKernel() {
                @Override
                public long granule() {
                    return 1;
                }

                @Override
                public ChunkFiller open(io.anamnesis.api.TensorArchive archive, Arena arena, DType target) {
                    return (first, count, dest) -> dest.fill((byte) 0);
                }
            };
            for (TensorEntry e : ctx.archive().tensors()) {
                if (e.name().endsWith(".q")) {
                    String base = e.name().substring(0, e.name().length() - 2);
                    out.add(new Recovery(base, e.shape(), scheme(), "toy", Map.of(e.name(), Role.QUANTIZED), kernel));
                }
            }
            return out;
        }
    }

    static MemoryArchive many(String suffix) {
        MemoryArchive a = new MemoryArchive();
        for (int i = 0; i < N; i++) a.add(i + suffix, DType.I8, Shape.of(1), new byte[]{1});
        return a;
    }

    /** The archive with a tensor list that counts the entries read from it. */
    static final class Counting implements TensorArchive {
        final TensorArchive inner;
        long reads;
        private final List<TensorEntry> counted;

        Counting(TensorArchive inner) {
            this.inner = inner;
            List<TensorEntry> all = List.copyOf(inner.tensors());
            this.counted = new AbstractList<>() {
                @Override
                public TensorEntry get(int index) {
                    reads++;
                    return all.get(index);
                }

                @Override
                public int size() {
                    return all.size();
                }
            };
        }

        @Override
        public String format() {
            return inner.format();
        }

        @Override
        public Optional<java.nio.file.Path> path() {
            return inner.path();
        }

        @Override
        public Map<String, String> metadata() {
            return inner.metadata();
        }

        @Override
        public Map<String, String> properties() {
            return inner.properties();
        }

        @Override
        public List<TensorEntry> tensors() {
            return counted;
        }

        @Override
        public MemorySegment data(TensorEntry entry, Arena arena) {
            return inner.data(entry, arena);
        }

        @Override
        public void close() {
            inner.close();
        }
    }

    @Test
    void plansTwoHundredThousandClaimedTensorsReadingEachAFewTimes() {
        Counting archive = new Counting(many(".q"));
        Anamnesis amn = Anamnesis.of(List.of(), List.of(), List.of(new ClaimsEveryQ()));
        RecoveryPlan plan = amn.plan(archive, DType.F32);
        assertThat(plan.outputs()).hasSize(N);
        assertThat(plan.outputs().get(N - 1).name()).isEqualTo((N - 1) + "");
        assertThat(archive.reads).isGreaterThanOrEqualTo(N).isLessThanOrEqualTo(READS_PER_TENSOR * N);
    }

    @Test
    void plansTwoHundredThousandUnclaimedTensorsReadingEachAFewTimes() {
        Counting archive = new Counting(many(".w"));
        RecoveryPlan plan = Anamnesis.of(List.of(), List.of(), List.of()).plan(archive, DType.F32);
        assertThat(plan.outputs()).hasSize(N);
        assertThat(archive.reads).isGreaterThanOrEqualTo(N).isLessThanOrEqualTo(READS_PER_TENSOR * N);
    }

    @Test
    void findsEachOfTwoHundredThousandOutputsByName() {
        RecoveryPlan plan = Anamnesis.of(List.of(), List.of(), List.of()).plan(many(".w"), DType.F32);
        for (int i = N - 1; i >= 0; i -= 997) {
            String name = i + ".w";
            assertThat(plan.output(name)).map(PlannedTensor::name).contains(name);
        }
        assertThat(plan.output("absent")).isEmpty();
    }
}
