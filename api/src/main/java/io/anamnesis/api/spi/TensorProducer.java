package io.anamnesis.api.spi;

import java.lang.foreign.Arena;

/** Makes one output tensor's bytes. Opened once per tensor by the writer. */
@FunctionalInterface
public interface TensorProducer {
    /**
     * Opens the inputs this tensor needs (mapping or materializing them in {@code arena},
     * which the writer closes when the tensor is done) and returns the filler.
     */
    ChunkFiller open(Arena arena);

    /**
     * A tensor whose output bytes are {@code region}'s bytes as stored: a writer may copy them
     * file to file in the kernel ({@link io.anamnesis.api.write.TensorDataWriter} does);
     * {@link #open} still works for any other consumer, through {@code mapped}.
     *
     * @param region where the bytes are
     * @param mapped the same bytes through a mapping, for consumers that read them
     */
    record StoredCopy(io.anamnesis.api.StoredRegion region, TensorProducer mapped) implements TensorProducer {
        public StoredCopy {
            java.util.Objects.requireNonNull(region, "region");
            java.util.Objects.requireNonNull(mapped, "mapped");
        }

        @Override
        public ChunkFiller open(Arena arena) {
            return mapped.open(arena);
        }
    }

    /**
     * A tensor better made once {@code first}'s tensor is complete, because {@code first}
     * leaves what it needs behind: a weight's scales, which its encoder computes anyway and
     * which would otherwise be read and computed again from the whole weight. A writer may
     * run it later than its place in the file ({@link io.anamnesis.api.write.TensorDataWriter}
     * takes other work meanwhile); {@code producer} must still be right whenever it runs,
     * computing for itself what {@code first} has not left (a {@link Handoff} carries it).
     *
     * @param producer makes the bytes
     * @param first    the producer of the tensor to wait for (the same object as that tensor's)
     */
    record After(TensorProducer producer, TensorProducer first) implements TensorProducer {
        public After {
            java.util.Objects.requireNonNull(producer, "producer");
            java.util.Objects.requireNonNull(first, "first");
        }

        @Override
        public ChunkFiller open(Arena arena) {
            return producer.open(arena);
        }
    }
}
