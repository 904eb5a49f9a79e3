package io.anamnesis.api.spi.examples;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.Role;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.numeric.FloatTarget;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.spi.RecoveryKernel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The api's package documentation shows this class: a whole {@code Dequantizer} for a toy
 * scheme, {@code <name>.q} (I8) with {@code <name>.step} (one F32), recovered as
 * {@code <name> = q * step}. {@link ExamplesTest} runs it.
 */
// @start region="example"
public final class ScaledInt8Dequantizer implements Dequantizer {
    @Override public String scheme() { return "scaled-int8"; }
    @Override public String description() { return "int8 values times one F32 step per tensor"; }

    @Override
    public List<Recovery> claim(ClaimContext context) {
        TensorArchive archive = context.archive();
        List<Recovery> out = new ArrayList<>();
        for (TensorEntry q : archive.tensors()) {
            if (!q.name().endsWith(".q") || !q.dtype().equals(DType.I8)) continue;
            String name = q.name().substring(0, q.name().length() - 2);
            // a group that is recognizably this scheme but broken is an error naming the tensor
            TensorEntry step = archive.tensor(name + ".step").orElseThrow(() ->
                    new MalformedFileException(q.name() + ": its companion " + name + ".step is missing"));
            if (!step.dtype().equals(DType.F32) || step.elementCount() != 1) {
                throw new MalformedFileException(step.name() + ": expected one F32 value");
            }
            Map<String, Role> inputs = new LinkedHashMap<>();
            inputs.put(q.name(), Role.QUANTIZED);  // first: the output takes its place in file order
            inputs.put(step.name(), Role.SCALE);
            out.add(new Recovery(name, q.shape(), scheme(), "int8 times a step", inputs, new Kernel(q, step)));
        }
        return out;
    }

    /** Element-wise, so any chunk boundary will do: a granule of 1. */
    private record Kernel(TensorEntry q, TensorEntry step) implements RecoveryKernel {
        @Override public long granule() { return 1; }

        @Override
        public ChunkFiller open(TensorArchive archive, Arena arena, DType target) {
            MemorySegment values = archive.data(q, arena);
            float step = archive.data(this.step, arena).get(LittleEndian.F32, 0);
            FloatTarget out = FloatTarget.of(target);
            // a pure function of the range: the same bytes whichever thread fills it
            return (first, count, dest) -> {
                for (long i = 0; i < count; i++) {
                    float v = values.get(ValueLayout.JAVA_BYTE, first + i) * step;
                    int bits = out.bits(v);
                    if (out.bytes() == 4) dest.set(LittleEndian.I32, i * 4, bits);
                    else dest.set(LittleEndian.I16, i * 2, (short) bits);
                }
            };
        }
    }
}
// @end
