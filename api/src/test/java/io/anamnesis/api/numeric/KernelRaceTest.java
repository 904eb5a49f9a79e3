package io.anamnesis.api.numeric;

import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The race's decisions with probes that take known times (busy waits, 25x apart, so that a
 * loaded machine does not turn them around): who wins, and the hand-back when the vector
 * kernel slows down after winning.
 */
class KernelRaceTest {

    static void busy(long micros) {
        long end = System.nanoTime() + micros * 1000;
        while (System.nanoTime() < end) Thread.onSpinWait();
    }

    static boolean waitFor(BooleanSupplier condition, boolean wanted) throws InterruptedException {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean() == wanted) return true;
            Thread.sleep(5);
        }
        return false;
    }

    @Test
    void aFasterVectorKernelWinsAndIsGivenBackWhenItSlowsDown() throws InterruptedException {
        AtomicBoolean slow = new AtomicBoolean(false);
        KernelRace race = new KernelRace("test", () -> busy(2_000), () -> busy(slow.get() ? 50_000 : 80),
                Kernels.Choice.AUTO, 10);
        // the first call starts the race and answers scalar: nothing has won yet
        assertThat(race.getAsBoolean()).isFalse();
        assertThat(waitFor(race, true)).as("the vector kernel wins").isTrue();
        slow.set(true);
        assertThat(waitFor(race, false)).as("the slowed vector kernel is given back").isTrue();
    }

    @Test
    void aSlowerVectorKernelNeverWins() throws InterruptedException {
        AtomicInteger rounds = new AtomicInteger();
        KernelRace race = new KernelRace("test", () -> busy(80), () -> {
            rounds.incrementAndGet();
            busy(2_000);
        }, Kernels.Choice.AUTO, 10);
        assertThat(race.getAsBoolean()).isFalse();
        // let it race a while: it must still answer scalar
        assertThat(waitFor(() -> rounds.get() >= 20, true)).isTrue();
        assertThat(race.getAsBoolean()).isFalse();
    }

    @Test
    void theChoiceDecidesWithoutARace() {
        AtomicInteger probes = new AtomicInteger();
        Runnable counted = probes::incrementAndGet;
        assertThat(new KernelRace("test", counted, counted, Kernels.Choice.VECTOR, 10).getAsBoolean()).isTrue();
        assertThat(new KernelRace("test", counted, counted, Kernels.Choice.SCALAR, 10).getAsBoolean()).isFalse();
        assertThat(probes.get()).isZero();
    }
}
