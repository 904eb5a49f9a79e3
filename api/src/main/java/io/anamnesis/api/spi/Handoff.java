package io.anamnesis.api.spi;

import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * What one producer leaves for another, made after it ({@link TensorProducer.After}): a
 * weight's encoder computes its scales anyway and leaves them here for the scale tensor, which
 * then need not read the weight again. One slot per index (a band, a piece, a row), put by the
 * first producer, taken once by the second; a slot taken empty means "compute it yourself", so
 * the bytes never depend on which producer ran first. Thread-safe; holds only what was put and
 * not yet taken.
 *
 * @param <T> what a slot holds
 */
public final class Handoff<T> {
    private final AtomicReferenceArray<T> slots;

    /** @param slots how many indices, {@code [0, slots)} */
    public Handoff(long slots) {
        this.slots = new AtomicReferenceArray<>(Math.toIntExact(slots));
    }

    /** Leaves {@code value} at {@code slot} (replacing what was left there). */
    public void put(long slot, T value) {
        slots.set(Math.toIntExact(slot), value);
    }

    /** What was left at {@code slot}, or null; the slot is empty afterwards. */
    public T take(long slot) {
        return slots.getAndSet(Math.toIntExact(slot), null);
    }
}
