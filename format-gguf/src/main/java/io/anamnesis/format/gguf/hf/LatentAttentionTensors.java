package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.Shape;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.PlannedTensor;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Optional;

/**
 * DeepSeek's {@code kv_b_proj} split for llama.cpp's absorbed latent attention, as the
 * converter's {@code DeepseekV2Model.modify_tensors} splits it: the weight
 * {@code [heads x (nope + v), rank]} viewed as {@code [heads, nope + v, rank]}, each head's first
 * {@code nope} rows (its key part) transposed to {@code [heads, rank, nope]}, its last {@code v}
 * rows (its value part) kept as {@code [heads, v, rank]}. Both are planned as F32 values a head at
 * a time: a chunk reads only the rows of the heads it writes.
 */
final class LatentAttentionTensors {
    private LatentAttentionTensors() {
    }

    /**
     * The key and value parts of {@code kvB} (named with {@code attention}'s {@code kB} and
     * {@code vB} in place of its {@code kvB} suffix), checked against config.json's head count,
     * {@code qk_nope_head_dim}, {@code v_head_dim} and {@code kv_lora_rank}.
     */
    static List<DenseTensor> split(DenseTensor kvB, Architecture.LatentAttention attention, long heads, long nope, long v,
                                   long rank) {
        if (kvB.shape().rank() != 2 || kvB.shape().dim(0) != heads * (nope + v) || kvB.shape().dim(1) != rank) {
            throw MalformedFileException.inTensor(kvB.name(), "has shape " + kvB.shape() + ", but config.json's "
                    + "num_key_value_heads " + heads + ", qk_nope_head_dim " + nope + ", v_head_dim " + v + " and kv_lora_rank "
                    + rank + " make [" + heads * (nope + v) + ", " + rank + "]");
        }
        String base = kvB.name().substring(0, kvB.name().length() - attention.kvB().length());
        PlannedTensor values = ConvertedTensor.values(kvB, kvB.name(), Optional.empty());
        long headIn = (nope + v) * rank;
        long keyPart = nope * rank, valuePart = v * rank;

        PlannedTensor keys = new PlannedTensor(base + attention.kB(), DType.F32, Shape.of(heads, rank, nope),
                Math.max(1, keyPart), arena -> {
            ChunkFiller source = values.producer().open(arena);
            MemorySegment rows = arena.allocate(4 * Math.max(1, keyPart), 4);
            return (first, count, dest) -> {
                for (long done = 0; done < count; done += keyPart) {
                    long head = (first + done) / keyPart;
                    source.fill(head * headIn, keyPart, rows);
                    // rows holds the head's nope rows of rank values; out[l][n] = rows[n][l]
                    for (long l = 0; l < rank; l++) {
                        for (long n = 0; n < nope; n++) {
                            dest.set(LittleEndian.F32, 4 * (done + l * nope + n), rows.get(LittleEndian.F32, 4 * (n * rank + l)));
                        }
                    }
                }
            };
        });
        PlannedTensor valueRows = new PlannedTensor(base + attention.vB(), DType.F32, Shape.of(heads, v, rank), 1, arena -> {
            ChunkFiller source = values.producer().open(arena);
            return (first, count, dest) -> {
                long done = 0;
                while (done < count) {
                    long at = first + done, head = at / valuePart, offset = at % valuePart;
                    long n = Math.min(count - done, valuePart - offset);
                    source.fill(head * headIn + keyPart + offset, n, dest.asSlice(4 * done, 4 * n));
                    done += n;
                }
            };
        });
        return List.of(ConvertedTensor.dense(keys), ConvertedTensor.dense(valueRows));
    }
}
