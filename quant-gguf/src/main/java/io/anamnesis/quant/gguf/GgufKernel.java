package io.anamnesis.quant.gguf;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.KernelRace;
import io.anamnesis.api.numeric.Kernels;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.RecoveryKernel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The kernel of one GGUF block tensor. Blocks never cross rows, so the tensor is one
 * sequential block stream and element {@code e} lives in block {@code e / blockElements}.
 * A chunk is decoded a batch of blocks at a time through small heap buffers (raw bytes,
 * F32 values, narrowed values), which keeps the working set in L1/L2.
 */
final class GgufKernel implements RecoveryKernel {
    /** Elements decoded per batch: 8 Ki F32 values = 32 KB. */
    static final int BATCH_ELEMENTS = 8192;

    /**
     * Whether the Vector API paths may run: {@link Kernels#vectorAllowed()} (the incubating
     * module is resolved and {@code anamnesis.kernels} is not {@code scalar}; the vector
     * class is never loaded otherwise) and the CPU has 256-bit vectors.
     */
    static final boolean VECTOR = Kernels.vectorAllowed() && GgufVectorKernels.usable();

    /** A decoder fused with the store: {@code blocks} blocks from byte {@code s} to element {@code e}. */
    @FunctionalInterface
    interface Fused {
        void decode(MemorySegment src, long s, MemorySegment dest, long e, long blocks, boolean bf16);
    }

    private final String tensor;
    private final GgufBlockType type;
    private final long elements;

    GgufKernel(String tensor, GgufBlockType type, long elements) {
        this.tensor = tensor;
        this.type = type;
        this.elements = elements;
    }

    @Override
    public long granule() {
        return type.blockElements();
    }

    @Override
    public ChunkFiller open(TensorArchive archive, Arena arena, DType target) {
        if (!target.equals(DType.BF16) && !target.equals(DType.F16) && !target.equals(DType.F32)) {
            throw UnsupportedFeatureException.inTensor(tensor, "cannot recover to " + target + " (expected BF16, F16 or F32)");
        }
        TensorEntry entry = archive.tensor(tensor).orElseThrow(
                () -> MalformedFileException.inTensor(tensor, "tensor vanished from the archive"));
        MemorySegment data = archive.data(entry, arena);
        long expected = (elements / type.blockElements()) * type.blockBytes();
        if (data.byteSize() != expected) {
            throw MalformedFileException.inTensor(tensor, "holds " + data.byteSize() + " bytes; "
                    + elements + " " + type.name() + " elements need " + expected);
        }
        if (!VECTOR) return (first, count, dest) -> decode(type, data, first, count, target, dest, false);
        KernelRace race = race(type);
        // Chosen per chunk: the vector kernel takes over once C2 has made it the faster one.
        return (first, count, dest) -> decode(type, data, first, count, target, dest, race.getAsBoolean());
    }

    private static final Map<GgufBlockType, KernelRace> RACES = new ConcurrentHashMap<>();

    /** One race per block type: each type's vector decoder is its own method for the JIT. */
    static KernelRace race(GgufBlockType type) {
        return RACES.computeIfAbsent(type, t -> {
            int blocks = Math.max(1, 16384 / t.blockElements());
            MemorySegment src = Arena.global().allocate((long) blocks * t.blockBytes());
            // Bytes below 0x3C keep every f16 scale finite and small, as in real files.
            for (long i = 0; i < src.byteSize(); i++) src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 37 % 60));
            MemorySegment dst = Arena.global().allocate(2L * blocks * t.blockElements());
            long n = (long) blocks * t.blockElements();
            return new KernelRace("gguf-" + t.name(),
                    () -> decode(t, src, 0, n, DType.BF16, dst, false),
                    () -> decode(t, src, 0, n, DType.BF16, dst, true));
        });
    }

    /**
     * Writes elements {@code [first, first + count)} of the block stream {@code data} as
     * {@code target} values into {@code dest}; both bounds are whole blocks.
     */
    static void decode(GgufBlockType type, MemorySegment data, long first, long count, DType target,
                       MemorySegment dest, boolean vector) {
        int be = type.blockElements();
        int bb = type.blockBytes();
        if (first % be != 0 || count % be != 0) {
            throw new IllegalArgumentException("chunk [" + first + ", +" + count + ") is not whole " + type + " blocks");
        }
        boolean bf16 = target.equals(DType.BF16);
        if (vector && !target.equals(DType.F16)) {
            Fused fused = GgufVectorKernels.fused(type);
            if (fused != null) {
                fused.decode(data, (first / be) * bb, dest, 0, count / be, bf16);
                return;
            }
        }
        int batchBlocks = Math.max(1, BATCH_ELEMENTS / be);
        byte[] raw = new byte[batchBlocks * bb];
        float[] values = new float[batchBlocks * be];
        short[] narrow = target.equals(DType.F32) ? null : new short[values.length];
        boolean lookUp = narrow != null && !(vector && bf16) && GgufTableKernels.decodes(type);
        int[] rounded = bf16 && !vector && !lookUp ? new int[values.length] : null;
        long block = first / be;
        long blocksLeft = count / be;
        long out = 0;
        while (blocksLeft > 0) {
            int n = (int) Math.min(batchBlocks, blocksLeft);
            int len = n * be;
            MemorySegment.copy(data, ValueLayout.JAVA_BYTE, block * bb, raw, 0, n * bb);
            if (lookUp) {
                // 4-bit codes to 16 bits by lookup: the same bits as the decode and narrowing below
                GgufTableKernels.decode(type, raw, 0, narrow, 0, n, bf16);
                MemorySegment.copy(narrow, 0, dest, LittleEndian.I16, out * 2, len);
            } else {
                type.decode(raw, 0, values, 0, n);
                if (vector && !target.equals(DType.F16)) {
                    GgufVectorKernels.narrow(values, len, dest, out, bf16);
                } else if (narrow == null) {
                    MemorySegment.copy(values, 0, dest, LittleEndian.F32, out * 4, len);
                } else if (bf16) {
                    Floats.f32ToBf16(values, 0, len, narrow, 0, rounded);
                    MemorySegment.copy(narrow, 0, dest, LittleEndian.I16, out * 2, len);
                } else {
                    for (int i = 0; i < len; i++) narrow[i] = Float.floatToFloat16(values[i]);
                    MemorySegment.copy(narrow, 0, dest, LittleEndian.I16, out * 2, len);
                }
            }
            block += n;
            blocksLeft -= n;
            out += len;
        }
    }
}
