package io.anamnesis.bench;

import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.format.gguf.GgufHeader;
import io.anamnesis.format.gguf.GgufReader;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * Opening a GGUF header shaped like a real model's: a 150 000-entry tokenizer vocabulary
 * (string array), its scores (float32 array) and token types (int32 array), plus 291
 * tensor infos of a 7B llama. Measures the header parse alone and a full open (parse +
 * rendering the metadata), from the page cache.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED"})
public class GgufHeaderBench {
    static final int VOCAB = 150_000;

    private Path file;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        file = Files.createTempFile("gguf-header-bench", ".gguf");
        try (OutputStream os = new BufferedOutputStream(Files.newOutputStream(file), 1 << 16)) {
            Le out = new Le(os);
            out.bytes("GGUF".getBytes(StandardCharsets.US_ASCII));
            out.u32(3);
            out.u64(291);
            out.u64(5);
            out.string("general.architecture").u32(8).string("llama");
            out.string("llama.context_length").u32(4).u32(4096);
            SplittableRandom r = new SplittableRandom(42);
            out.string("tokenizer.ggml.tokens").u32(9).u32(8).u64(VOCAB);
            for (int i = 0; i < VOCAB; i++) {
                StringBuilder sb = new StringBuilder("\u0120");
                int n = 1 + r.nextInt(10);
                for (int k = 0; k < n; k++) sb.append((char) ('a' + r.nextInt(26)));
                out.string(sb.toString());
            }
            out.string("tokenizer.ggml.scores").u32(9).u32(6).u64(VOCAB);
            for (int i = 0; i < VOCAB; i++) out.u32(Float.floatToRawIntBits(-i));
            out.string("tokenizer.ggml.token_type").u32(9).u32(5).u64(VOCAB);
            for (int i = 0; i < VOCAB; i++) out.u32(1);
            long offset = 0;
            for (int i = 0; i < 291; i++) {
                out.string("blk." + i / 9 + ".t" + i + ".weight").u32(2).u64(4096).u64(1);
                out.u32(0).u64(offset);
                offset += 4096 * 4;
            }
            long pad = (32 - out.written % 32) % 32;
            for (long i = 0; i < pad; i++) os.write(0);
            os.write(new byte[(int) offset]);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        Files.deleteIfExists(file);
    }

    @Benchmark
    public GgufHeader parseHeader() {
        return GgufReader.readHeader(file, ParseLimits.defaults());
    }

    @Benchmark
    public int openArchive() {
        try (TensorArchive a = new GgufReader().open(file, ParseLimits.defaults())) {
            return a.metadata().size() + a.tensors().size();
        }
    }

    /** Little-endian field writer. */
    private static final class Le {
        final DataOutputStream out;
        long written;

        Le(OutputStream os) {
            out = new DataOutputStream(os);
        }

        Le bytes(byte[] b) throws IOException {
            out.write(b);
            written += b.length;
            return this;
        }

        Le u32(long v) throws IOException {
            out.writeInt(Integer.reverseBytes((int) v));
            written += 4;
            return this;
        }

        Le u64(long v) throws IOException {
            out.writeLong(Long.reverseBytes(v));
            written += 8;
            return this;
        }

        Le string(String s) throws IOException {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            u64(b.length);
            return bytes(b);
        }
    }
}
