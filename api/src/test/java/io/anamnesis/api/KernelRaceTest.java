package io.anamnesis.api;

import io.anamnesis.api.numeric.KernelRace;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

class KernelRaceTest {
    static void spin(long nanos) {
        long end = System.nanoTime() + nanos;
        while (System.nanoTime() < end) Thread.onSpinWait();
    }

    @Test
    void switchesOnlyAfterTheVectorKernelWinsSeveralTimes() throws Exception {
        AtomicInteger vectorCalls = new AtomicInteger();
        // The "vector" probe is slow for its first 20 calls (as before C2), then fast.
        KernelRace race = new KernelRace("test", () -> spin(200_000),
                () -> spin(vectorCalls.incrementAndGet() <= 20 ? 2_000_000 : 10_000));
        assertThat(race.getAsBoolean()).isFalse();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!race.getAsBoolean() && System.nanoTime() < deadline) Thread.sleep(5);
        assertThat(race.getAsBoolean()).isTrue();
        assertThat(vectorCalls.get()).isGreaterThanOrEqualTo(23);
    }

    @Test
    void aFailingProbeKeepsTheScalarKernel() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        KernelRace race = new KernelRace("failing", () -> calls.incrementAndGet(), () -> {
            throw new IllegalStateException("no vector support");
        });
        race.getAsBoolean();
        long deadline = System.nanoTime() + 2_000_000_000L;
        while (calls.get() == 0 && System.nanoTime() < deadline) Thread.sleep(5);
        Thread.sleep(50);
        assertThat(race.getAsBoolean()).isFalse();
    }
}
