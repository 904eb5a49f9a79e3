package io.anamnesis.api.numeric;

import java.util.function.BooleanSupplier;

/**
 * Says when a Vector API kernel has become worth calling.
 *
 * <p>Until HotSpot's C2 has compiled it, Vector API code runs in the interpreter or C1,
 * where every vector operation is a boxed object and a lambda: measured here, 100 times
 * slower than the plain scalar loop that C1 compiles within milliseconds. In a run of a few
 * seconds, which is what recovering a whole file takes, that warm-up costs more than the
 * vector kernel ever saves. So workers start on the scalar kernel (bit-identical, tested so)
 * and a daemon thread races the two on a small private input, flipping this switch the
 * first time the vector kernel is the faster one several times running. A short run never
 * pays for the warm-up; a long one gets the vector speed as soon as it exists. After that the
 * thread checks twice a second that the vector kernel has stayed fast, and hands the work
 * back to the scalar one if it has not (see {@code watch}).
 *
 * <p>The race runs only when {@link Kernels#choice()} is {@code auto}: {@code vector} makes
 * the vector kernel the winner from the start (benchmarks), {@code scalar} never lets it win.
 */
public final class KernelRace implements BooleanSupplier {
    private static final int WINS_NEEDED = 3;
    /** The race gives up (scalar for good) after this long: a vector kernel that never compiles. */
    private static final long GIVE_UP_NANOS = 30_000_000_000L;

    /** How often the vector kernel's speed is checked once it has won. */
    private static final long WATCH_MILLIS = 500;
    /** Checks lost running, each by more than half, that hand the work back to the scalar kernel. */
    private static final int LOSSES_TO_GIVE_BACK = 3;

    private final long watchMillis;
    private final String name;
    private final Runnable scalarProbe;
    private final Runnable vectorProbe;
    private volatile boolean vectorWins;
    private volatile boolean started;

    /**
     * @param name        names the racing thread
     * @param scalarProbe one call of the scalar kernel on a small input (a few thousand elements)
     * @param vectorProbe the same work through the vector kernel
     */
    public KernelRace(String name, Runnable scalarProbe, Runnable vectorProbe) {
        this(name, scalarProbe, vectorProbe, Kernels.choice(), WATCH_MILLIS);
    }

    /** With the choice and the watch's interval given (tests). */
    KernelRace(String name, Runnable scalarProbe, Runnable vectorProbe, Kernels.Choice choice, long watchMillis) {
        this.name = name;
        this.scalarProbe = scalarProbe;
        this.vectorProbe = vectorProbe;
        this.watchMillis = watchMillis;
        switch (choice) {
            case VECTOR -> {
                vectorWins = true;
                started = true;
            }
            case SCALAR -> started = true;
            case AUTO -> {
            }
        }
    }

    /** True once the vector kernel has won; starts the race on the first call. */
    @Override
    public boolean getAsBoolean() {
        if (!started) start();
        return vectorWins;
    }

    private synchronized void start() {
        if (started) return;
        started = true;
        Thread t = new Thread(this::race, "anamnesis-kernel-race-" + name);
        t.setDaemon(true);
        t.setPriority(Thread.MIN_PRIORITY);
        t.start();
    }

    private void race() {
        long deadline = System.nanoTime() + GIVE_UP_NANOS;
        int wins = 0;
        try {
            while (System.nanoTime() < deadline) {
                long t0 = System.nanoTime();
                scalarProbe.run();
                long t1 = System.nanoTime();
                vectorProbe.run();
                long t2 = System.nanoTime();
                wins = (t2 - t1) < (t1 - t0) ? wins + 1 : 0;
                if (wins >= WINS_NEEDED) {
                    vectorWins = true;
                    watch();
                    return;
                }
                // Rest as long as the round took: the race uses at most half a core, which the
                // workers on the scalar kernel need more than the race does.
                Thread.sleep(Math.max(1, (t2 - t0) / 1_000_000));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException | LinkageError e) {
            // A probe that fails leaves the scalar kernel in charge: correct, only slower.
            vectorWins = false;
        }
    }

    /**
     * Keeps an eye on the vector kernel after it has won. Its compiled code can be thrown away
     * (the real calls trap out of what C2 compiled for the probe's profile), and C2 can fail to
     * compile it again: JDK 25 gave up on the FP8 encoder with "Bad graph detected in
     * build_loop_late" and left it to C1 for good, where every vector operation is a boxed
     * object: a 1 GiB forget took 11 s instead of 2. A probe pair every half second, and
     * three checks lost running (the vector kernel more than twice the scalar one's time)
     * hand the work back to the scalar kernel for the rest of the run.
     */
    private void watch() throws InterruptedException {
        int losses = 0;
        while (true) {
            Thread.sleep(watchMillis);
            long t0 = System.nanoTime();
            scalarProbe.run();
            long t1 = System.nanoTime();
            vectorProbe.run();
            long t2 = System.nanoTime();
            losses = (t2 - t1) > 2 * (t1 - t0) ? losses + 1 : 0;
            if (losses >= LOSSES_TO_GIVE_BACK) {
                vectorWins = false;
                return;
            }
        }
    }

}
