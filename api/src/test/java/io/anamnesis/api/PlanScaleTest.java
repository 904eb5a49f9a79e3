package io.anamnesis.api;

import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.spi.RecoveryKernel;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * A file with 200 000 tensors is valid (and cheap to make hostile): planning it and finding
 * each output by name must take time in proportion to the tensor count, not its square.
 * The bound is several times the linear cost on a loaded machine (about 2 s) and well
 * below the quadratic one (2e10 name comparisons).
 */
class PlanScaleTest {
    static final int N = 200_000;
    static final Duration BOUND = Duration.ofSeconds(12);

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

    @Test
    void plansTwoHundredThousandClaimedTensorsInLinearTime() {
        MemoryArchive archive = many(".q");
        Anamnesis amn = Anamnesis.of(List.of(), List.of(), List.of(new ClaimsEveryQ()));
        RecoveryPlan plan = assertTimeoutPreemptively(BOUND, () -> amn.plan(archive, DType.F32));
        assertThat(plan.outputs()).hasSize(N);
        assertThat(plan.outputs().get(N - 1).name()).isEqualTo((N - 1) + "");
    }

    @Test
    void findsEachOfTwoHundredThousandOutputsByNameInLinearTime() {
        RecoveryPlan plan = Anamnesis.of(List.of(), List.of(), List.of()).plan(many(".w"), DType.F32);
        assertTimeoutPreemptively(BOUND, () -> {
            for (int i = N - 1; i >= 0; i--) {
                String name = i + ".w";
                if (!plan.output(name).orElseThrow().name().equals(name)) throw new AssertionError(name);
            }
        });
        assertThat(plan.output("absent")).isEmpty();
    }
}
