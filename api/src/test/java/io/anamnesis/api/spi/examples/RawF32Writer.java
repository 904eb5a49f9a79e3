package io.anamnesis.api.spi.examples;

import io.anamnesis.api.DType;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.WriteOptions;
import io.anamnesis.api.write.AtomicOutput;
import io.anamnesis.api.write.TensorDataWriter;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;

/**
 * The api's package documentation shows this class: a whole {@code FormatWriter} for the toy
 * format of {@link RawF32Reader}, one F32 tensor per file. {@link ExamplesTest} runs it.
 */
// @start region="example"
public final class RawF32Writer implements FormatWriter {
    @Override public String format() { return "rawf32"; }
    @Override public List<String> fileExtensions() { return List.of("rawf32"); }
    @Override public String description() { return "one F32 tensor after a magic and a count"; }
    @Override public boolean supports(DType dtype) { return dtype.equals(DType.F32); }

    @Override
    public void write(OutputPlan plan, Path target, WriteOptions options) {
        // everything that can be refused is refused before a byte is written
        if (plan.tensors().size() != 1 || !supports(plan.tensors().getFirst().dtype())) {
            throw new UnsupportedFeatureException("rawf32 holds exactly one F32 tensor");
        }
        PlannedTensor values = plan.tensors().getFirst();
        // a temporary file renamed into place at the end: the target appears whole or not at all
        AtomicOutput.write(target, channel -> {
            ByteBuffer head = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN)
                    .put(RawF32Reader.MAGIC).putLong(values.elementCount()).flip();
            TensorDataWriter.writeFully(channel, head, 0);
            // the engine produces the values chunk by chunk, in bounded memory, on options.threads()
            TensorDataWriter.write(channel, List.of(new TensorDataWriter.Region(16, values)), options);
        });
    }
}
// @end
