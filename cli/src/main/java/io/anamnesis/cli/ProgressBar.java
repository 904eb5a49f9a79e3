package io.anamnesis.cli;

import io.anamnesis.api.spi.ProgressListener;

import java.io.PrintWriter;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A one-line progress bar on stderr for long writes. Hand-written: the progress-bar
 * libraries are automatic modules (jlink refuses them) and pull in a terminal library.
 *
 * <p>It draws only when the console is a terminal and the run has lasted {@value #DELAY_MS}
 * ms, so quick runs, pipes and logs stay clean. Writer threads only add to a counter; a
 * daemon thread draws every {@value #TICK_MS} ms.
 */
final class ProgressBar implements ProgressListener, AutoCloseable {
    static final long DELAY_MS = 1000;
    static final long TICK_MS = 100;
    static final int WIDTH = 30;

    private final PrintWriter err;
    private final boolean enabled;
    private final AtomicLong done = new AtomicLong();
    private volatile long total = -1;
    private volatile long startNanos;
    private volatile boolean drawn;
    private volatile boolean closed;
    private Thread ticker;

    ProgressBar(PrintWriter err, boolean enabled) {
        this.err = err;
        this.enabled = enabled;
    }

    /** A bar that draws only when standard error, where it draws, is a terminal. */
    static ProgressBar forTerminal(Amn.Context ctx, boolean quiet) {
        return new ProgressBar(ctx.err(), !quiet && ctx.terminal().err());
    }

    @Override
    public void started(long totalBytes) {
        total = totalBytes;
        startNanos = System.nanoTime();
        if (!enabled) return;
        ticker = Thread.ofPlatform().daemon().name("amn-progress").start(() -> {
            try {
                Thread.sleep(DELAY_MS);
                while (!closed) {
                    draw();
                    Thread.sleep(TICK_MS);
                }
            } catch (InterruptedException e) {
                // closed
            }
        });
    }

    @Override
    public void advanced(long bytes) {
        done.addAndGet(bytes);
    }

    private synchronized void draw() {
        if (closed) return;
        double seconds = (System.nanoTime() - startNanos) / 1e9;
        err.print("\r" + line(done.get(), total, seconds));
        err.flush();
        drawn = true;
    }

    /** {@code [#########.........]  31%  1.2 GiB / 3.9 GiB  410.2 MiB/s  ETA 7s}. */
    static String line(long done, long total, double seconds) {
        double fraction = total <= 0 ? 1 : Math.min(1, (double) done / total);
        int filled = (int) Math.round(fraction * WIDTH);
        String bar = "#".repeat(filled) + ".".repeat(WIDTH - filled);
        double rate = seconds > 0 ? done / seconds : 0;
        String eta = rate > 0 && done < total ? "  ETA " + duration((total - done) / rate) : "";
        return String.format(Locale.ROOT, "[%s] %3d%%  %s / %s  %s/s%s", bar, (int) Math.floor(fraction * 100),
                Text.size(done), Text.size(Math.max(0, total)), Text.size((long) rate), eta);
    }

    static String duration(double seconds) {
        long s = (long) Math.ceil(seconds);
        if (s < 60) return s + "s";
        if (s < 3600) return (s / 60) + "m" + String.format(Locale.ROOT, "%02d", s % 60) + "s";
        return (s / 3600) + "h" + String.format(Locale.ROOT, "%02d", (s % 3600) / 60) + "m";
    }

    boolean drawn() {
        return drawn;
    }

    /** Stops drawing and clears the bar's line. */
    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            if (drawn) {
                err.print("\r" + " ".repeat(line(done.get(), total, 1).length() + 16) + "\r");
                err.flush();
            }
        }
        if (ticker != null) ticker.interrupt();
    }
}
