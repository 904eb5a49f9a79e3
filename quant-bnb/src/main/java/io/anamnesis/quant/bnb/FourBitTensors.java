package io.anamnesis.quant.bnb;

import io.anamnesis.api.DType;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.Shape;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.DenseReader;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.Handoff;
import io.anamnesis.api.json.Json;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.TensorProducer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The stored tensors of one 4-bit weight, planned as bitsandbytes' {@code Linear4bit} saves
 * them: {@code <w>} (U8 {@code [(n + 1) / 2, 1]}, packed codes), {@code <w>.absmax} (F32, or U8
 * codes with double quantization), {@code <w>.quant_map} (F32 [16]), for double quantization
 * {@code <w>.nested_absmax} (F32, one per 256 blocks) and {@code <w>.nested_quant_map}
 * (F32 [256]), and {@code <w>.quant_state.bitsandbytes__nf4|fp4} (U8, the JSON state).
 *
 * <p>Each is produced on its own from the dense values, so any range of any of them can be
 * made in any order; a chunk is worked through in pieces of {@value #PIECE} elements, which
 * bounds the buffers whatever the chunk size. The one figure that needs the whole tensor,
 * the double-quantization offset (the mean of every block's absmax), is computed once, by
 * whichever producer asks first, in one streaming pass.
 */
final class FourBitTensors {
    private FourBitTensors() {
    }

    /** Elements encoded per step inside a chunk. */
    static final int PIECE = 1 << 16;

    /** The longest text Python's {@code repr} gives a float32 value ({@code -1.1754942106924411e-38} and one spare). */
    static final int MAX_OFFSET_TEXT = 24;

    /**
     * @param dtype the quant state's {@code dtype} ({@code bfloat16}, {@code float16}, {@code float32})
     */
    static List<PlannedTensor> plan(DenseTensor t, BnbRecipe.FourBitSpec spec, String dtype, LossMeter loss) {
        String w = t.name();
        long n = t.elementCount();
        int bs = spec.blocksize();
        long blocks = ceilDiv(n, bs);
        boolean fp4 = spec.fp4();
        boolean dq = spec.nested().isPresent();
        int nestedSpan = DoubleQuant.NESTED_BLOCKSIZE * bs;
        int piece = Math.max(PIECE, dq ? nestedSpan : bs);
        float[] book = fp4 ? FourBitEncoder.FP4_MAP : FourBitEncoder.NF4_MAP;
        float[] values = FourBit.codeValues(book, fp4);
        Offset offset = dq ? new Offset(t, bs, piece) : null;
        float[] nestedBook = dq ? spec.nested().get().clone() : null;
        float[] bounds = dq ? DoubleQuant.boundaries(nestedBook) : null;

        List<PlannedTensor> out = new ArrayList<>();
        long bytes = (n + 1) / 2;
        // without double quantization, the absmax tensor is the weight's block absmax: left by its producer
        PieceAbsmax left = dq ? null : new PieceAbsmax(n, piece);
        TensorProducer weightProducer = arena -> {
            DenseReader reader = DenseReader.open(t, arena);
            Work work = new Work(piece, bs);
            return (first, count, dest) -> {
                long e0 = 2 * first;
                long e1 = Math.min(n, 2 * (first + count));
                long o = 0;
                for (long s = e0; s < e1; s += piece) {
                    int m = (int) Math.min(piece, e1 - s);
                    int nb = (int) ceilDiv(m, bs);
                    reader.read(s, m, work.x, 0);
                    FourBitEncoder.blockAbsmax(work.x, 0, m, bs, work.absmax, 0);
                    if (left != null) left.put(s, java.util.Arrays.copyOf(work.absmax, nb));
                    FourBitEncoder.encode(fp4, work.x, 0, m, bs, work.absmax, 0, work.packed, 0);
                    int pb = (m + 1) / 2;
                    MemorySegment.copy(work.packed, 0, dest, ValueLayout.JAVA_BYTE, o, pb);
                    o += pb;
                    if (!loss.measures()) continue;
                    // what a loader decodes: with double quantization, the absmax it gets back
                    float[] scales = work.absmax;
                    if (dq) {
                        float off = offset.get();
                        DoubleQuant.encode(work.absmax, 0, nb, off, bounds, work.codes, 0, work.nested, 0);
                        for (int b = 0; b < nb; b++) {
                            float scaled = nestedBook[work.codes[b] & 0xFF] * work.nested[b / DoubleQuant.NESTED_BLOCKSIZE];
                            work.decodedAbsmax[b] = scaled + off;
                        }
                        scales = work.decodedAbsmax;
                    }
                    FourBitEncoder.decode(work.packed, 0, m, bs, scales, 0, values, work.decoded, 0);
                    loss.record(w, s, work.x, 0, work.decoded, 0, m);
                }
            };
        };
        out.add(new PlannedTensor(w, DType.U8, Shape.of(bytes, 1), Math.max(1, Math.min(bytes, (dq ? nestedSpan : bs) / 2)),
                weightProducer));

        if (dq) {
            out.add(new PlannedTensor(w + ".absmax", DType.U8, Shape.of(blocks), Math.min(blocks, DoubleQuant.NESTED_BLOCKSIZE),
                    arena -> {
                        DenseReader[] reader = new DenseReader[1];
                        Work work = new Work(piece, bs);
                        return (first, count, dest) -> {
                            float off = offset.get(); // the pass that also keeps every block's absmax
                            eachPiece(reader, t, arena, offset, work, n, bs, piece, first, count, (nb, o) -> {
                                DoubleQuant.encode(work.absmax, 0, nb, off, bounds, work.codes, 0, work.nested, 0);
                                MemorySegment.copy(work.codes, 0, dest, ValueLayout.JAVA_BYTE, o, nb);
                            });
                        };
                    }));
        } else {
            TensorProducer absmax = arena -> {
                DenseReader[] reader = new DenseReader[1];
                Work work = new Work(piece, bs);
                return (first, count, dest) -> eachPiece(reader, t, arena, left, work, n, bs, piece, first, count,
                        (nb, o) -> MemorySegment.copy(work.absmax, 0, dest, LittleEndian.F32, 4 * o, nb));
            };
            // made after the weight, it copies what the weight's encoder left instead of reading the weight again
            out.add(new PlannedTensor(w + ".absmax", DType.F32, Shape.of(blocks), 1, new TensorProducer.After(absmax, weightProducer)));
        }
        out.add(constant(w + ".quant_map", book));
        if (dq) {
            long nestedBlocks = ceilDiv(blocks, DoubleQuant.NESTED_BLOCKSIZE);
            out.add(new PlannedTensor(w + ".nested_absmax", DType.F32, Shape.of(nestedBlocks), 1, arena -> {
                DenseReader[] reader = new DenseReader[1];
                Work work = new Work(piece, bs);
                return (first, count, dest) -> {
                    float off = offset.get();
                    eachPiece(reader, t, arena, offset, work, n, bs, piece, first * DoubleQuant.NESTED_BLOCKSIZE,
                            Math.min(blocks, (first + count) * DoubleQuant.NESTED_BLOCKSIZE) - first * DoubleQuant.NESTED_BLOCKSIZE,
                            (nb, o) -> {
                                DoubleQuant.encode(work.absmax, 0, nb, off, bounds, work.codes, 0, work.nested, 0);
                                int k = (int) ceilDiv(nb, DoubleQuant.NESTED_BLOCKSIZE);
                                MemorySegment.copy(work.nested, 0, dest, LittleEndian.F32, 4 * (o / DoubleQuant.NESTED_BLOCKSIZE), k);
                            });
                };
            }));
            out.add(constant(w + ".nested_quant_map", nestedBook));
        }

        String stateName = w + (fp4 ? BnbDequantizer.FP4_STATE : BnbDequantizer.NF4_STATE);
        if (!dq) {
            byte[] json = Json.dumps(state(spec, dtype, t.shape(), 0f)).getBytes(StandardCharsets.UTF_8);
            out.add(constant(stateName, json));
        } else {
            // the offset is known only after a pass over the tensor, the blob's size before any
            // byte is made: json.dumps' text, then spaces (which JSON readers skip) up to the longest offset
            int size = Json.dumps(state(spec, dtype, t.shape(), 0f)).length() - "0.0".length() + MAX_OFFSET_TEXT;
            out.add(new PlannedTensor(stateName, DType.U8, Shape.of(size), size, arena -> (first, count, dest) -> {
                byte[] json = Json.dumps(state(spec, dtype, t.shape(), offset.get())).getBytes(StandardCharsets.UTF_8);
                byte[] padded = new byte[size];
                java.util.Arrays.fill(padded, (byte) ' ');
                System.arraycopy(json, 0, padded, 0, json.length);
                MemorySegment.copy(padded, (int) first, dest, ValueLayout.JAVA_BYTE, 0, (int) count);
            }));
        }
        return out;
    }

    /** {@code QuantState.as_dict(packed=True)}'s non-tensor part, in its order. */
    static Map<String, Object> state(BnbRecipe.FourBitSpec spec, String dtype, Shape shape, float offset) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("quant_type", spec.type());
        m.put("blocksize", spec.blocksize());
        m.put("dtype", dtype);
        List<Object> dims = new ArrayList<>();
        for (long d : shape.toArray()) dims.add(d);
        m.put("shape", dims);
        if (spec.nested().isPresent()) {
            m.put("nested_blocksize", DoubleQuant.NESTED_BLOCKSIZE);
            m.put("nested_dtype", "float32");
            // offset.item(): the float32 as a Python float
            m.put("nested_offset", (double) offset);
        }
        return m;
    }

    /**
     * Runs {@code step} over blocks {@code [firstBlock, firstBlock + blockCount)} a piece at a
     * time, absmax computed: copied from {@code kept} (the double-quantization pass's blocks, or
     * what the weight's producer left) when it holds them, else read and computed.
     */
    private static void eachPiece(DenseReader[] reader, DenseTensor t, Arena arena, AbsmaxSource kept, Work work, long n, int bs,
                                  int piece, long firstBlock, long blockCount, PieceStep step) {
        long e0 = firstBlock * bs;
        long e1 = Math.min(n, (firstBlock + blockCount) * bs);
        long o = 0;
        for (long s = e0; s < e1; s += piece) {
            int m = (int) Math.min(piece, e1 - s);
            int nb = (int) ceilDiv(m, bs);
            if (kept == null || !kept.copyBlockAbsmax(s, nb, work.absmax)) {
                if (reader[0] == null) reader[0] = DenseReader.open(t, arena);
                reader[0].read(s, m, work.x, 0);
                FourBitEncoder.blockAbsmax(work.x, 0, m, bs, work.absmax, 0);
            }
            step.run(nb, o);
            o += nb;
        }
    }

    @FunctionalInterface
    private interface PieceStep {
        /** @param blocks blocks in this piece, their absmax in the work's buffer; @param block index of the first, from the chunk's start */
        void run(int blocks, long block);
    }

    /** One producer's buffers, sized for a piece. */
    private static final class Work {
        final float[] x;
        final float[] decoded;
        final byte[] packed;
        final float[] absmax;
        final float[] decodedAbsmax;
        final byte[] codes;
        final float[] nested;

        Work(int piece, int bs) {
            int blocks = (int) ceilDiv(piece, bs);
            x = new float[piece];
            decoded = new float[piece];
            packed = new byte[(piece + 1) / 2];
            absmax = new float[blocks];
            decodedAbsmax = new float[blocks];
            codes = new byte[blocks];
            nested = new float[(int) ceilDiv(blocks, DoubleQuant.NESTED_BLOCKSIZE)];
        }
    }

    /** Block absmax computed elsewhere, for the tensors made of them. */
    private interface AbsmaxSource {
        /**
         * The absmax of the {@code blocks} blocks from element {@code element} into
         * {@code dest[0, blocks)}; false, copying nothing, when they are not held.
         */
        boolean copyBlockAbsmax(long element, int blocks, float[] dest);
    }

    /**
     * The block absmax the weight's producer computed, one array per piece of the weight
     * ({@link Handoff}), for the absmax tensor, which the writer makes after the weight.
     */
    static final class PieceAbsmax implements AbsmaxSource {
        private final Handoff<float[]> pieces;
        private final int piece;

        PieceAbsmax(long elements, int piece) {
            this.piece = piece;
            this.pieces = new Handoff<>(ceilDiv(elements, piece));
        }

        void put(long element, float[] absmax) {
            if (element % piece == 0) pieces.put(element / piece, absmax);
        }

        @Override
        public boolean copyBlockAbsmax(long element, int blocks, float[] dest) {
            if (element % piece != 0) return false;
            float[] a = pieces.take(element / piece);
            if (a == null || a.length != blocks) return false;
            System.arraycopy(a, 0, dest, 0, blocks);
            return true;
        }
    }

    /**
     * The double-quantization offset of one tensor: the mean of every block's absmax, computed
     * once. The pass also keeps every block's absmax (when there are at most
     * {@value #KEPT_BLOCKS} blocks: 16 MB) for the two small tensors made of them, the absmax
     * codes and the nested absmax, which would otherwise read and widen the whole weight once
     * each; the blocks are let go once both have copied them out.
     */
    static final class Offset implements AbsmaxSource {
        static final long KEPT_BLOCKS = 1L << 22;
        private final DenseTensor tensor;
        private final int blocksize;
        private final int piece;
        private volatile Float value;
        private volatile float[] blockAbsmax;
        private final java.util.concurrent.atomic.AtomicLong toCopy = new java.util.concurrent.atomic.AtomicLong();

        Offset(DenseTensor tensor, int blocksize, int piece) {
            this.tensor = tensor;
            this.blocksize = blocksize;
            this.piece = piece;
        }

        float get() {
            Float v = value;
            if (v != null) return v;
            synchronized (this) {
                if (value == null) value = compute();
                return value;
            }
        }

        private float compute() {
            long n = tensor.elementCount();
            long blocks = ceilDiv(n, blocksize);
            float[] kept = blocks <= KEPT_BLOCKS ? new float[(int) blocks] : null;
            float[] x = new float[piece];
            float[] absmax = new float[(int) ceilDiv(piece, blocksize)];
            double sum = 0;
            try (Arena arena = Arena.ofConfined()) {
                DenseReader reader = DenseReader.open(tensor, arena);
                for (long s = 0; s < n; s += piece) {
                    int m = (int) Math.min(piece, n - s);
                    int nb = (int) ceilDiv(m, blocksize);
                    reader.read(s, m, x, 0);
                    FourBitEncoder.blockAbsmax(x, 0, m, blocksize, absmax, 0);
                    for (int b = 0; b < nb; b++) sum += absmax[b];
                    if (kept != null) System.arraycopy(absmax, 0, kept, (int) (s / blocksize), nb);
                }
            }
            if (kept != null) {
                toCopy.set(2 * blocks);
                blockAbsmax = kept;
            }
            return DoubleQuant.mean(sum, blocks);
        }

        /** From the pass ({@link #get} first); false when it did not keep the blocks or they were let go. */
        @Override
        public boolean copyBlockAbsmax(long element, int count, float[] dest) {
            float[] kept = blockAbsmax;
            if (kept == null) return false;
            System.arraycopy(kept, (int) (element / blocksize), dest, 0, count);
            if (toCopy.addAndGet(-count) <= 0) blockAbsmax = null;
            return true;
        }
    }

    private static PlannedTensor constant(String name, float[] values) {
        byte[] b = new byte[4 * values.length];
        MemorySegment.copy(values, 0, MemorySegment.ofArray(b), LittleEndian.F32, 0, values.length);
        return new PlannedTensor(name, DType.F32, Shape.of(values.length), values.length, arena -> (first, count, dest) ->
                MemorySegment.copy(b, (int) (4 * first), dest, ValueLayout.JAVA_BYTE, 0, (int) (4 * count)));
    }

    private static PlannedTensor constant(String name, byte[] bytes) {
        return new PlannedTensor(name, DType.U8, Shape.of(bytes.length), Math.max(1, bytes.length), arena -> (first, count, dest) ->
                MemorySegment.copy(bytes, (int) first, dest, ValueLayout.JAVA_BYTE, 0, (int) count));
    }

    static long ceilDiv(long a, long b) {
        return a == 0 ? 0 : (a - 1) / b + 1;
    }
}
