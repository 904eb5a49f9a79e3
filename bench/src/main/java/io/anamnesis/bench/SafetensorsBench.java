package io.anamnesis.bench;

import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.format.safetensors.SafetensorsHeader;
import io.anamnesis.format.safetensors.SafetensorsReader;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Header-only open of a safetensors file: prefix, JSON header, validation and the name index,
 * no tensor byte. 12,000 tensors give a 1.1 MB header, the size of a 70B-parameter
 * checkpoint's index; 100,000 tensors give 9 MB. Each tensor is a BF16 [2, 2] (8 data bytes),
 * so the file is almost all header.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED"})
public class SafetensorsBench {

    @Param({"12000", "100000"})
    public int tensors;

    private Path file;
    private byte[] bytes;
    private final SafetensorsReader reader = new SafetensorsReader();

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        StringBuilder json = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
        for (int i = 0; i < tensors; i++) {
            long begin = 8L * i;
            json.append(",\"model.layers.").append(i).append(".self_attn.q_proj.weight\":{\"dtype\":\"BF16\",\"shape\":[2,2],")
                    .append("\"data_offsets\":[").append(begin).append(',').append(begin + 8).append("]}");
        }
        json.append('}');
        while (json.length() % 8 != 0) json.append(' ');
        byte[] header = json.toString().getBytes(StandardCharsets.UTF_8);
        bytes = new byte[8 + header.length + 8 * tensors];
        for (int i = 0; i < 8; i++) bytes[i] = (byte) ((long) header.length >>> (8 * i));
        System.arraycopy(header, 0, bytes, 8, header.length);
        file = Files.createTempFile("bench", ".safetensors");
        Files.write(file, bytes);
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        Files.deleteIfExists(file);
    }

    /** FileChannel reads of prefix and header, parse, validation against the file size, index. */
    @Benchmark
    public TensorEntry openAndIndex() {
        try (TensorArchive archive = reader.open(file, ParseLimits.defaults())) {
            return archive.tensor("model.layers." + (tensors / 2) + ".self_attn.q_proj.weight").orElseThrow();
        }
    }

    /** The same header from an in-memory stream: the parser alone, no file system. */
    @Benchmark
    public SafetensorsHeader parseFromStream() {
        return SafetensorsHeader.read(new ByteArrayInputStream(bytes));
    }
}
