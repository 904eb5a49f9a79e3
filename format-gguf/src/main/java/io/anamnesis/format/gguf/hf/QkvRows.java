package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.PlannedTensor;

import java.util.List;
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
        requireGrouped(qkv, heads, kv, hidden, headsKey, kvKey, " (1 when absent)");
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

    /**
     * InternLM2's fused {@code attention.wqkv} (Falcon's grouped layout: each group's query heads, then its key head and
     * its value head) split as the converter's {@code InternLM2Model.modify_tensors} splits it: the query heads in group
     * order, the key heads, the value heads, as three tensors named {@code prefix + "wq.weight"}, {@code "wk.weight"},
     * {@code "wv.weight"} (gguf-py's InternLM2 names), each planned as F32 values a row at a time. The rows are as
     * stored; the rope permutation of the query and key rows follows as for any llama-style tensor.
     */
    static List<DenseTensor> groupedParts(DenseTensor qkv, long heads, long kv, long hidden, String prefix) {
        requireGrouped(qkv, heads, kv, hidden, "num_attention_heads", "num_key_value_heads", "");
        long headDim = hidden / heads, perGroup = heads / kv;
        PlannedTensor values = ConvertedTensor.values(qkv, qkv.name(), Optional.empty());
        List<DenseTensor> parts = new java.util.ArrayList<>();
        String[] names = {"wq", "wk", "wv"};
        for (int which = 0; which < 3; which++) {
            final int part = which;
            long partHeads = which == 0 ? heads : kv;
            io.anamnesis.api.Shape shape = io.anamnesis.api.Shape.of(partHeads * headDim, hidden);
            parts.add(ConvertedTensor.dense(new PlannedTensor(prefix + names[which] + ".weight", DType.F32, shape, hidden, arena -> {
                ChunkFiller source = values.producer().open(arena);
                return (first, count, dest) -> {
                    long firstRow = first / hidden;
                    for (long r = firstRow; r < firstRow + count / hidden; r++) {
                        long head = r / headDim, j = r % headDim;
                        long stored = part == 0 ? (head / perGroup) * (perGroup + 2) + head % perGroup   // query i of group g
                                : head * (perGroup + 2) + perGroup + (part - 1);                          // group g's key or value
                        source.fill((stored * headDim + j) * hidden, hidden, dest.asSlice((r - firstRow) * 4 * hidden, 4 * hidden));
                    }
                };
            })));
        }
        return List.copyOf(parts);
    }

    /** A grouped fused q/k/v's shape: {@code [(heads + 2 kv) x hidden / heads, hidden]}, the groups dividing the heads. */
    private static void requireGrouped(DenseTensor qkv, long heads, long kv, long hidden, String headsKey, String kvKey, String kvNote) {
        long rows = heads > 0 && kv > 0 && heads % kv == 0 && hidden % heads == 0 ? (heads + 2 * kv) * (hidden / heads) : -1;
        if (rows < 0 || qkv.shape().rank() != 2 || qkv.shape().dim(0) != rows || qkv.shape().dim(1) != hidden) {
            throw MalformedFileException.inTensor(qkv.name(), "has shape " + qkv.shape() + ", but config.json's " + headsKey + " " + heads
                    + " and " + kvKey + " " + kv + kvNote + " with hidden_size " + hidden + " make a fused q/k/v of ["
                    + (rows < 0 ? "?" : rows) + ", " + hidden + "] (key/value groups dividing the heads, heads dividing the width)");
        }
    }
}
