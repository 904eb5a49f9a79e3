package io.anamnesis.api.write;

import io.anamnesis.api.DType;
import io.anamnesis.api.Shape;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.TensorProducer;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The writer's order of slabs: file order, a TensorProducer.After tensor once its first is written. */
class ScheduleTest {
    private static final TensorProducer NOTHING = arena -> (first, count, dest) -> { };

    /** a: two slabs; b: after a; c: one slab. Nothing is produced, only planned. */
    private static List<TensorDataWriter.Slab> slabs(TensorProducer a, TensorProducer b) {
        long big = 2 * TensorDataWriter.SLAB_BYTES;
        return TensorDataWriter.slabs(List.of(
                new TensorDataWriter.Region(0, new PlannedTensor("a", DType.U8, Shape.of(big), 1, a)),
                new TensorDataWriter.Region(big, new PlannedTensor("b", DType.U8, Shape.of(16), 1, b)),
                new TensorDataWriter.Region(big + 16, new PlannedTensor("c", DType.U8, Shape.of(16), 1, NOTHING))));
    }

    private static String name(TensorDataWriter.Slab s) {
        return s == null ? null : s.region().tensor().name();
    }

    @Test
    void anAfterTensorIsPassedOverWhileItsFirstIsUnfinishedThenTakenFirst() {
        TensorProducer a = arena -> (first, count, dest) -> { };
        List<TensorDataWriter.Slab> slabs = slabs(a, new TensorProducer.After(NOTHING, a));
        assertThat(slabs).extracting(ScheduleTest::name).containsExactly("a", "a", "b", "c");
        TensorDataWriter.Schedule s = new TensorDataWriter.Schedule(slabs);
        TensorDataWriter.Slab a0 = s.take();
        TensorDataWriter.Slab a1 = s.take();
        assertThat(List.of(name(a0), name(a1))).containsExactly("a", "a");
        s.done(a0);
        assertThat(name(s.take())).as("b waits: one slab of a is still being written").isEqualTo("c");
        s.done(a1);
        assertThat(name(s.take())).isEqualTo("b");
        assertThat(s.take()).isNull();
    }

    @Test
    void whenOnlyPassedOverSlabsAreLeftTheyAreTakenAnyway() {
        TensorProducer a = arena -> (first, count, dest) -> { };
        TensorDataWriter.Schedule s = new TensorDataWriter.Schedule(slabs(a, new TensorProducer.After(NOTHING, a)));
        assertThat(List.of(name(s.take()), name(s.take()), name(s.take()))).containsExactly("a", "a", "c");
        assertThat(name(s.take())).as("a is unfinished, but b is all that is left").isEqualTo("b");
        assertThat(s.take()).isNull();
    }

    @Test
    void withoutAfterTheOrderIsTheFileOrder() {
        TensorDataWriter.Schedule s = new TensorDataWriter.Schedule(slabs(NOTHING, NOTHING));
        assertThat(List.of(name(s.take()), name(s.take()), name(s.take()), name(s.take()))).containsExactly("a", "a", "b", "c");
        assertThat(s.take()).isNull();
    }
}
