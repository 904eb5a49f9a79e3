package org.example.mlx;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Recovery;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The dequantizer against MLX's layout and formula, both worked out here: values packed into
 * each row's little-endian bit stream as mlx.core.quantize packs them, and
 * {@code w = scales * q + biases} with the multiply and the add each rounded to the scales'
 * dtype, as mx.dequantize does on the CPU.
 */
class MlxAffineDequantizerTest {
    @TempDir
    Path dir;

    /** A tiny in-memory archive: what a FormatReader would hand the plugin. */
    record Archive(Path file, Map<String, TensorEntry> entries, Map<String, byte[]> bytes) implements TensorArchive {
        @Override public String format() { return "memory"; }
        @Override public Optional<Path> path() { return Optional.ofNullable(file); }
        @Override public Map<String, String> metadata() { return Map.of(); }
        @Override public Map<String, String> properties() { return Map.of(); }
        @Override public List<TensorEntry> tensors() { return List.copyOf(entries.values()); }
        @Override public MemorySegment data(TensorEntry e, Arena arena) {
            byte[] b = bytes.get(e.name());
            return arena.allocate(b.length).copyFrom(MemorySegment.ofArray(b));
        }
        @Override public void close() { }
    }

    /** One quantized layer: the codes, scales and biases it was made from, and its tensors. */
    record Layer(int bits, int group, DType dtype, int rows, int in, int[][] q, float[] scales, float[] biases) {
        /** mlx.core.quantize's packing: value i of a row at bits i*bits.. of the row's little-endian words. */
        byte[] packed() {
            int wordsPerRow = in * bits / 32;
            ByteBuffer out = ByteBuffer.allocate(rows * wordsPerRow * 4).order(ByteOrder.LITTLE_ENDIAN);
            for (int r = 0; r < rows; r++) {
                long[] words = new long[wordsPerRow];
                for (int c = 0; c < in; c++) {
                    long bit = (long) c * bits;
                    words[(int) (bit / 32)] |= ((long) q[r][c] << (bit % 32)) & 0xFFFF_FFFFL;
                    if (bit % 32 + bits > 32) words[(int) (bit / 32) + 1] |= (long) q[r][c] >>> (32 - bit % 32);
                }
                for (long w : words) out.putInt((int) w);
            }
            return out.array();
        }

        byte[] floats(float[] v) {
            ByteBuffer out = ByteBuffer.allocate(v.length * (dtype.equals(DType.F32) ? 4 : 2)).order(ByteOrder.LITTLE_ENDIAN);
            for (float f : v) {
                if (dtype.equals(DType.F32)) out.putFloat(f);
                else out.putShort(dtype.equals(DType.F16) ? Float.floatToFloat16(f) : bf16(f));
            }
            return out.array();
        }

        /** The formula: (scale * q) rounded to the dtype, plus bias, rounded to the dtype. */
        float expected(int r, int c) {
            int g = r * (in / group) + c / group;
            return toDtype(toDtype(scales[g] * q[r][c]) + biases[g]);
        }

        float toDtype(float v) {
            if (dtype.equals(DType.F32)) return v;
            if (dtype.equals(DType.F16)) return Float.float16ToFloat(Float.floatToFloat16(v));
            return Float.intBitsToFloat(bf16(v) << 16);
        }
    }

    /** BF16 by round-to-nearest-even, written out here rather than taken from the api. */
    static short bf16(float v) {
        int bits = Float.floatToRawIntBits(v);
        int lsb = (bits >>> 16) & 1;
        return (short) ((bits + 0x7FFF + lsb) >>> 16);
    }

    static Layer layer(int bits, int group, DType dtype, long seed) {
        Random random = new Random(seed);
        int rows = 3;
        int in = group * 2;
        int[][] q = new int[rows][in];
        for (int[] row : q) for (int c = 0; c < in; c++) row[c] = random.nextInt(1 << bits);
        int groups = rows * in / group;
        float[] scales = new float[groups];
        float[] biases = new float[groups];
        Layer shape = new Layer(bits, group, dtype, rows, in, q, scales, biases);
        for (int g = 0; g < groups; g++) {
            // scales and biases as the dtype holds them, so the file stores exactly these
            scales[g] = shape.toDtype((random.nextFloat() + 0.01f) / 37);
            biases[g] = shape.toDtype(-random.nextFloat() * 1.7f);
        }
        return shape;
    }

    Archive archive(Path file, Layer... layers) {
        Map<String, TensorEntry> entries = new LinkedHashMap<>();
        Map<String, byte[]> bytes = new LinkedHashMap<>();
        for (int i = 0; i < layers.length; i++) {
            Layer l = layers[i];
            String m = "model.layers." + i + ".mlp.down_proj";
            put(entries, bytes, m + ".weight", DType.U32, Shape.of(l.rows, (long) l.in * l.bits / 32), l.packed());
            put(entries, bytes, m + ".scales", l.dtype, Shape.of(l.rows, l.in / l.group), l.floats(l.scales));
            put(entries, bytes, m + ".biases", l.dtype, Shape.of(l.rows, l.in / l.group), l.floats(l.biases));
        }
        return new Archive(file, entries, bytes);
    }

    static void put(Map<String, TensorEntry> entries, Map<String, byte[]> bytes, String name, DType t, Shape s, byte[] b) {
        entries.put(name, TensorEntry.of(name, t, s));
        bytes.put(name, b);
    }

    static float[] recover(Recovery r, TensorArchive archive) {
        try (Arena arena = Arena.ofConfined()) {
            ChunkFiller filler = r.kernel().open(archive, arena, DType.F32);
            int n = (int) r.outputShape().elementCount();
            MemorySegment out = arena.allocate(4L * n);
            // two chunks, split off a group boundary: chunks may fall anywhere
            filler.fill(0, 5, out.asSlice(0, 20));
            filler.fill(5, n - 5, out.asSlice(20));
            float[] values = new float[n];
            MemorySegment.copy(out, java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, values, 0, n);
            return values;
        }
    }

    @Test
    void everyBitWidthGroupSizeAndDtypeRecoversTheFormula() throws Exception {
        long seed = 1;
        for (int bits : MlxAffineDequantizer.BITS) {
            for (int group : MlxAffineDequantizer.GROUP_SIZES) {
                for (DType dtype : List.of(DType.F16, DType.BF16, DType.F32)) {
                    Path folder = Files.createDirectories(dir.resolve(bits + "-" + group + "-" + dtype));
                    Files.writeString(folder.resolve("config.json"),
                            "{\"quantization\": {\"group_size\": " + group + ", \"bits\": " + bits + "}}");
                    Layer l = layer(bits, group, dtype, seed++);
                    Archive archive = archive(folder.resolve("model.safetensors"), l);
                    List<Recovery> claimed = new MlxAffineDequantizer().claim(new ClaimContext(archive, ParseLimits.defaults()));
                    assertEquals(1, claimed.size());
                    Recovery r = claimed.getFirst();
                    assertEquals("model.layers.0.mlp.down_proj.weight", r.outputName());
                    assertEquals(Shape.of(l.rows, l.in), r.outputShape());
                    float[] got = recover(r, archive);
                    for (int row = 0; row < l.rows; row++) {
                        for (int c = 0; c < l.in; c++) {
                            assertEquals(Float.floatToIntBits(l.expected(row, c)), Float.floatToIntBits(got[row * l.in + c]),
                                    bits + "-bit group " + group + " " + dtype + " at " + row + "," + c);
                        }
                    }
                }
            }
        }
    }

    @Test
    void aLayersOwnEntryInTheConfigOverridesTheModelsBitsAndGroup() throws Exception {
        Files.writeString(dir.resolve("config.json"), """
                {"quantization": {"group_size": 64, "bits": 4,
                                  "model.layers.1.mlp.down_proj": {"group_size": 32, "bits": 8}}}""");
        Layer four = layer(4, 64, DType.BF16, 7);
        Layer eight = layer(8, 32, DType.BF16, 8);
        Archive archive = archive(dir.resolve("model.safetensors"), four, eight);
        List<Recovery> claimed = new MlxAffineDequantizer().claim(new ClaimContext(archive, ParseLimits.defaults()));
        assertEquals(List.of("MLX affine 4-bit, group 64, BF16 scales", "MLX affine 8-bit, group 32, BF16 scales"),
                claimed.stream().map(Recovery::description).toList());
        float[] got = recover(claimed.get(1), archive);
        assertEquals(eight.expected(2, 63), got[2 * eight.in + 63]);
    }

    @Test
    void withoutAConfigSizesThatFitTwoLayoutsAreAnErrorThatSaysWhatToAdd() {
        Layer l = layer(4, 64, DType.F16, 3);   // 4-bit group 64 and 8-bit group 32 fit the same shapes
        Archive archive = archive(dir.resolve("model.safetensors"), l);
        MalformedFileException e = assertThrows(MalformedFileException.class,
                () -> new MlxAffineDequantizer().claim(new ClaimContext(archive, ParseLimits.defaults())));
        assertTrue(e.getMessage().contains("model.layers.0.mlp.down_proj.weight") && e.getMessage().contains("config.json"),
                e.getMessage());
    }

    @Test
    void aConfigThatContradictsTheShapesIsMalformed() throws Exception {
        Files.writeString(dir.resolve("config.json"), "{\"quantization\": {\"group_size\": 64, \"bits\": 3}}");
        Archive archive = archive(dir.resolve("model.safetensors"), layer(4, 64, DType.F16, 4));
        MalformedFileException e = assertThrows(MalformedFileException.class,
                () -> new MlxAffineDequantizer().claim(new ClaimContext(archive, ParseLimits.defaults())));
        assertTrue(e.getMessage().contains("3-bit, group 64"), e.getMessage());
    }
}
