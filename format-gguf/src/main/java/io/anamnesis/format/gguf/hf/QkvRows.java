package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.PlannedTensor;

import java.util.Optional;

/**
 * A fused query/key/value projection stored per head, as GPT-NeoX stores it (rows {@code [heads, 3, head_dim]}:
 * head 0's q, k and v, then head 1's, ...), re-laid as the converter's {@code GPTNeoXModel.modify_tensors} does
 * into three blocks of rows ({@code [3, heads, head_dim]}: every head's q, then every k, then every v), the
 * layout llama.cpp's fused {@code attn_qkv} reads. Planned as F32 values a row at a time (a bias is rows of one).
 * Falcon's grouped layout ({@link #grouped}) likewise.
 */
final class QkvRows {
    private QkvRows() {
    }

    /** {@code qkv} ({@code [3 hidden, hidden]} or {@code [3 hidden]}) with its rows in block order, checked against {@code heads} and {@code hidden}. */
    static DenseTensor blocks(DenseTensor qkv, long heads, long hidden) {
        return blocks(qkv, heads, hidden, "num_attention_heads", "hidden_size");
    }

    /** {@link #blocks(DenseTensor, long, long)}, naming config.json's keys for the head count and the width as the family spells them. */
    static DenseTensor blocks(DenseTensor qkv, long heads, long hidden, String headsKey, String hiddenKey) {
        long rows = qkv.shape().rank() == 0 ? 0 : qkv.shape().dim(0);
        long cols = qkv.shape().rank() == 1 ? 1 : qkv.shape().rank() == 2 ? qkv.shape().dim(1) : -1;
        if (rows != 3 * hidden || (cols != 1 && cols != hidden) || heads <= 0 || hidden % heads != 0) {
            throw MalformedFileException.inTensor(qkv.name(), "has shape " + qkv.shape() + ", but config.json's " + hiddenKey + " " + hidden
                    + " and " + headsKey + " " + heads + " make a fused q/k/v of " + 3 * hidden + " rows of " + hidden
                    + " (or a bias of " + 3 * hidden + ")");
        }
        long headDim = hidden / heads;
        PlannedTensor values = ConvertedTensor.values(qkv, qkv.name(), Optional.empty());
        PlannedTensor out = new PlannedTensor(qkv.name(), DType.F32, qkv.shape(), cols, arena -> {
            ChunkFiller source = values.producer().open(arena);
            return (first, count, dest) -> {
                long firstRow = first / cols;
                for (long r = firstRow; r < firstRow + count / cols; r++) {
                    // output row (which, h, j) is stored row (h, which, j)
                    long which = r / hidden, h = r % hidden / headDim, j = r % headDim;
                    source.fill(((h * 3 + which) * headDim + j) * cols, cols, dest.asSlice((r - firstRow) * 4 * cols, 4 * cols));
                }
            };
        });
        return ConvertedTensor.dense(out);
    }
    /**
     * Falcon's fused q/k/v ({@code [kv, heads / kv + 2, head_dim]} rows of {@code hidden}: each group's query heads, then
     * its key head and its value head) as the converter's {@code FalconModel.modify_tensors} lays it out: every query
     * head, then every key head, then every value head, each in group order. Planned as F32 values a row at a time.
     */
    static DenseTensor grouped(DenseTensor qkv, long heads, long kv, long hidden, String headsKey, String kvKey) {
        long headDim = hidden / heads, perGroup = heads / kv;
        long rows = (heads + 2 * kv) * headDim;
        if (qkv.shape().rank() != 2 || qkv.shape().dim(0) != rows || qkv.shape().dim(1) != hidden) {
            throw MalformedFileException.inTensor(qkv.name(), "has shape " + qkv.shape() + ", but config.json's " + headsKey + " " + heads
                    + " and " + kvKey + " " + kv + " (1 when absent) with hidden_size " + hidden + " make a fused q/k/v of [" + rows
                    + ", " + hidden + "]");
        }
        long cols = hidden;
        PlannedTensor values = ConvertedTensor.values(qkv, qkv.name(), Optional.empty());
        PlannedTensor out = new PlannedTensor(qkv.name(), DType.F32, qkv.shape(), cols, arena -> {
            ChunkFiller source = values.producer().open(arena);
            return (first, count, dest) -> {
                long firstRow = first / cols;
                for (long r = firstRow; r < firstRow + count / cols; r++) {
                    long head = r / headDim, j = r % headDim, stored;
                    if (head < heads) {
                        stored = (head / perGroup) * (perGroup + 2) + head % perGroup;     // query i of group g
                    } else if (head < heads + kv) {
                        stored = (head - heads) * (perGroup + 2) + perGroup;              // the key of group g
                    } else {
                        stored = (head - heads - kv) * (perGroup + 2) + perGroup + 1;     // the value of group g
                    }
                    source.fill((stored * headDim + j) * cols, cols, dest.asSlice((r - firstRow) * 4 * cols, 4 * cols));
                }
            };
        });
        return ConvertedTensor.dense(out);
    }
}
