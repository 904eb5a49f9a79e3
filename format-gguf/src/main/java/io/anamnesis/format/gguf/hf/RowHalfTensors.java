package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.Shape;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.PlannedTensor;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A fused tensor split into its two halves of rows ({@link Architecture.RowHalves}), as the
 * converter's {@code data_torch.split(width, dim=-2)} splits it: {@code [experts?, 2 width, hidden]}
 * into the first {@code width} rows of each expert and the last. Each half is planned as F32 values
 * a run of rows at a time (one expert's half is one contiguous run of the source), so a chunk reads
 * only the rows it writes.
 */
final class RowHalfTensors {
    private RowHalfTensors() {
    }

    /** The two halves of {@code fused}, named by {@code spec}, checked against config.json's width, hidden size and experts. */
    static List<DenseTensor> split(DenseTensor fused, Architecture.RowHalves spec, Map<?, ?> config) {
        long width = positive(config, spec.width()), hidden = positive(config, "hidden_size");
        Optional<Long> experts = spec.experts().map(k -> positive(config, k));
        Shape want = experts.map(e -> Shape.of(e, 2 * width, hidden)).orElseGet(() -> Shape.of(2 * width, hidden));
        if (!fused.shape().equals(want)) {
            throw MalformedFileException.inTensor(fused.name(), "has shape " + fused.shape() + ", but config.json "
                    + experts.map(e -> spec.experts().get() + " " + e + ", ").orElse("") + spec.width() + " " + width
                    + " and hidden_size " + hidden + " make it " + want + " (the fused halves of rows)");
        }
        PlannedTensor values = ConvertedTensor.values(fused, fused.name(), Optional.empty());
        long half = width * hidden, slabs = experts.orElse(1L);
        Shape halfShape = experts.map(e -> Shape.of(e, width, hidden)).orElseGet(() -> Shape.of(width, hidden));
        return List.of(ConvertedTensor.dense(half(values, spec.half(fused.name(), 0), halfShape, half, 0, slabs)),
                ConvertedTensor.dense(half(values, spec.half(fused.name(), 1), halfShape, half, 1, slabs)));
    }

    /** Half {@code which} of every slab of {@code 2 x half} values of {@code values}. */
    private static PlannedTensor half(PlannedTensor values, String name, Shape shape, long half, int which, long slabs) {
        return new PlannedTensor(name, DType.F32, shape, 1, arena -> {
            ChunkFiller source = values.producer().open(arena);
            return (first, count, dest) -> {
                long done = 0;
                while (done < count) {
                    long at = first + done, slab = at / half, offset = at % half;
                    long n = Math.min(count - done, half - offset);
                    source.fill(slab * 2 * half + which * half + offset, n, dest.asSlice(4 * done, 4 * n));
                    done += n;
                }
            };
        });
    }

    private static long positive(Map<?, ?> config, String key) {
        return HfConfig.integer(config, key).filter(x -> x > 0 && x <= 1 << 24)
                .orElseThrow(() -> HfGgufExporter.badKey(key, "is missing or not a positive integer up to 2^24"));
    }
}
