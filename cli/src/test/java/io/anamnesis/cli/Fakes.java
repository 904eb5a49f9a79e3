package io.anamnesis.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Role;
import io.anamnesis.api.SecurityViolationException;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.write.AtomicOutput;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.spi.FileProbe;
import io.anamnesis.api.spi.FormatReader;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.spi.RecoveryKernel;
import io.anamnesis.api.write.TensorDataWriter;
import io.anamnesis.api.spi.WriteOptions;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.LongStream;

/**
 * Small stand-ins for the real modules, so the cli is tested on its own: a "fake" format
 * whose first line says how the reader behaves, a toy int8-times-scale dequantizer, and a
 * minimal safetensors writer (the real one is another module).
 *
 * <p>A fake file is the text {@code FAKE <directive>}; {@code ok} gives three tensors:
 * {@code layer.q} I8 [2, 2] = {1, -2, 3, 127}, {@code layer.s} F32 [] = 0.25 and
 * {@code norm} F32 [2] = {0.5, 2}; {@code scaled} the same with {@code layer.s} = 0.5;
 * {@code plain} one unquantized {@code dense} F32 [2] = {1, 2}. Other directives throw the
 * error of that kind.
 */
final class Fakes {
    private Fakes() {
    }

    static Anamnesis amn() {
        return Anamnesis.of(List.of(new FakeReader()), List.of(new MiniSafetensorsWriter()), List.of(new ToyDequantizer()));
    }

    static Anamnesis withoutDequantizers() {
        return Anamnesis.of(List.of(new FakeReader()), List.of(new MiniSafetensorsWriter()), List.of());
    }

    static Path write(Path dir, String name, String directive) throws IOException {
        Path p = dir.resolve(name);
        Files.writeString(p, "FAKE " + directive + "\n");
        return p;
    }

    static byte[] f32(float... v) {
        ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) b.putFloat(f);
        return b.array();
    }

    static final class FakeReader implements FormatReader {
        @Override
        public String format() {
            return "fake";
        }

        @Override
        public List<String> fileExtensions() {
            return List.of("fake");
        }

        @Override
        public String description() {
            return "a test format driven by its first line";
        }

        @Override
        public boolean canRead(FileProbe probe) {
            return probe.startsWith((byte) 'F', (byte) 'A', (byte) 'K', (byte) 'E');
        }

        @Override
        public TensorArchive open(Path path, ParseLimits limits) {
            String directive;
            try {
                directive = Files.readString(path, StandardCharsets.UTF_8).substring(5).strip();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return switch (directive) {
                case "parse" -> throw new MalformedFileException("header cut short at byte 12");
                case "limit" -> throw new LimitExceededException("header length is 200000000, over the limit of 100000000");
                case "security" -> throw new SecurityViolationException("pickle global os.system is not allowed");
                case "unsupported" -> throw new UnsupportedFeatureException("npy format version 9.0 is not supported");
                case "io" -> throw new TensorIOException("cannot read: device gone");
                case "bug" -> throw new IllegalStateException("a reader bug");
                case "ok", "baddata", "gptq-looking", "badgroup", "scaled", "plain" -> new FakeArchive(path, directive);
                default -> throw new MalformedFileException("unknown fake directive " + directive);
            };
        }
    }

    static final class FakeArchive implements TensorArchive {
        private final Path path;
        private final String directive;
        private final Map<String, byte[]> bytes = new LinkedHashMap<>();
        private final List<TensorEntry> entries = new ArrayList<>();

        FakeArchive(Path path, String directive) {
            this.path = path;
            this.directive = directive;
            if (directive.equals("plain")) {
                // nothing quantized, and no name in common with the others
                add("dense", DType.F32, Shape.of(2), f32(1f, 2f));
                return;
            }
            add("layer.q", DType.I8, Shape.of(2, 2), new byte[]{1, -2, 3, 127});
            // "scaled": the same tensors, the layer scaled by 0.5 instead of 0.25
            add("layer.s", DType.F32, Shape.SCALAR, f32(directive.equals("scaled") ? 0.5f : 0.25f));
            add("norm", DType.F32, Shape.of(2), f32(0.5f, 2f));
            if (directive.equals("gptq-looking")) add("mlp.qweight", DType.I32, Shape.of(1), new byte[4]);
            if (directive.equals("badgroup")) add("bad.q", DType.I8, Shape.of(1), new byte[1]); // no bad.s
        }

        private void add(String name, DType dtype, Shape shape, byte[] data) {
            entries.add(new TensorEntry(name, dtype, shape, data.length));
            bytes.put(name, data);
        }

        @Override
        public String format() {
            return "fake";
        }

        @Override
        public Optional<Path> path() {
            return Optional.of(path);
        }

        @Override
        public Map<String, String> metadata() {
            Map<String, String> m = new LinkedHashMap<>();
            m.put("format", "fake");
            m.put("note", "two\nlines");
            return m;
        }

        @Override
        public Map<String, Object> structuredMetadata() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("format", "fake");
            m.put("tokens", LongStream.range(0, 100).boxed().toList());
            m.put("short", List.of(1L, 2L, 3L));
            m.put("nested", Map.of("scores", LongStream.range(0, 65).mapToObj(i -> (double) i).toList()));
            return m;
        }

        @Override
        public Map<String, String> properties() {
            Map<String, String> p = new LinkedHashMap<>();
            p.put("version", "1");
            p.put("byte order", "little-endian");
            return p;
        }

        @Override
        public List<TensorEntry> tensors() {
            return entries;
        }

        @Override
        public MemorySegment data(TensorEntry entry, Arena arena) {
            if (directive.equals("baddata") && entry.name().equals("norm")) {
                throw MalformedFileException.inTensor("norm", "data runs past the end of the file");
            }
            byte[] b = bytes.get(entry.name());
            MemorySegment seg = arena.allocate(Math.max(1, b.length)).asSlice(0, b.length);
            MemorySegment.copy(MemorySegment.ofArray(b), 0, seg, 0, b.length);
            return seg.asReadOnly();
        }

        @Override
        public void close() {
        }
    }

    /** {@code <p>.q} (I8) times the scalar {@code <p>.s} (F32), recovered as {@code <p>}. */
    static final class ToyDequantizer implements Dequantizer {
        @Override
        public String scheme() {
            return "toy";
        }

        @Override
        public String description() {
            return "int8 times a scalar";
        }

        @Override
        public List<Recovery> claim(ClaimContext ctx) {
            List<Recovery> out = new ArrayList<>();
            for (TensorEntry e : ctx.archive().tensors()) {
                if (!e.name().endsWith(".q")) continue;
                String prefix = e.name().substring(0, e.name().length() - 2);
                if (ctx.archive().tensor(prefix + ".s").isEmpty()) {
                    throw MalformedFileException.inTensor(e.name(), "has no scale " + prefix + ".s");
                }
                Map<String, Role> inputs = new LinkedHashMap<>();
                inputs.put(e.name(), Role.QUANTIZED);
                inputs.put(prefix + ".s", Role.SCALE);
                out.add(new Recovery(prefix, e.shape(), scheme(), "toy int8 x scale", inputs, new RecoveryKernel() {
                    @Override
                    public long granule() {
                        return 1;
                    }

                    @Override
                    public ChunkFiller open(TensorArchive archive, Arena arena, DType target) {
                        MemorySegment q = archive.data(e, arena);
                        float s = archive.data(archive.tensor(prefix + ".s").orElseThrow(), arena).get(LittleEndian.F32, 0);
                        return (first, count, dest) -> {
                            for (long i = 0; i < count; i++) {
                                float v = q.get(ValueLayout.JAVA_BYTE, first + i) * s;
                                if (target.equals(DType.F32)) dest.setAtIndex(LittleEndian.F32, i, v);
                                else if (target.equals(DType.BF16)) dest.setAtIndex(LittleEndian.I16, i, Floats.f32ToBf16(v));
                                else dest.setAtIndex(LittleEndian.I16, i, Floats.f32ToF16(v));
                            }
                        };
                    }
                }));
            }
            return out;
        }
    }

    /** Enough of safetensors to check what remember writes: JSON header, then the data. */
    static final class MiniSafetensorsWriter implements FormatWriter {
        @Override
        public String format() {
            return "safetensors";
        }

        @Override
        public List<String> fileExtensions() {
            return List.of("safetensors");
        }

        @Override
        public String description() {
            return "test writer";
        }

        @Override
        public boolean supports(DType dtype) {
            return DType.standard(dtype.name()).isPresent();
        }

        @Override
        public void write(OutputPlan plan, Path target, WriteOptions options) {
            Map<String, Object> header = new LinkedHashMap<>();
            header.put("__metadata__", plan.metadata());
            long offset = 0;
            List<TensorDataWriter.Region> regions = new ArrayList<>();
            List<long[]> spans = new ArrayList<>();
            for (PlannedTensor t : plan.tensors()) {
                spans.add(new long[]{offset, offset + t.byteSize()});
                offset += t.byteSize();
            }
            for (int i = 0; i < plan.tensors().size(); i++) {
                PlannedTensor t = plan.tensors().get(i);
                Map<String, Object> entry = new LinkedHashMap<>();
                entry.put("dtype", t.dtype().name());
                entry.put("shape", t.shape().toArray());
                entry.put("data_offsets", spans.get(i));
                header.put(t.name(), entry);
            }
            byte[] json;
            try {
                json = new ObjectMapper().writeValueAsBytes(header);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            long dataStart = 8 + json.length;
            for (int i = 0; i < plan.tensors().size(); i++) {
                regions.add(new TensorDataWriter.Region(dataStart + spans.get(i)[0], plan.tensors().get(i)));
            }
            AtomicOutput.write(target, channel -> {
                ByteBuffer head = ByteBuffer.allocate((int) dataStart).order(ByteOrder.LITTLE_ENDIAN);
                head.putLong(json.length).put(json).flip();
                TensorDataWriter.writeFully(channel, head, 0);
                TensorDataWriter.write(channel, regions, options);
            });
        }
    }
}
