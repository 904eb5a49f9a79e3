package io.anamnesis.release;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 15, item 3: the plugin in examples/mlx-affine, a separate Maven project that depends
 * on anamnesis-api alone, builds against the staged release (its own tests included); amn
 * from the release archive finds its jar in the image's plugins folder and through
 * AMN_PLUGINS, lists it, and recovers an MLX-quantized file with it. The expected values are
 * MLX's formula, {@code w = scales * q + biases} (the multiply and the add each rounded to the
 * scales' dtype, as mx.dequantize does), worked out here from the codes the test packs.
 */
class OutsidePluginTest {
    @TempDir
    Path dir;

    /** A layer as mlx.core.quantize leaves it: codes, F16 scales and biases, packed rows. */
    record Layer(String module, int bits, int group, int rows, int in, int[][] q, short[] scales, short[] biases) {
        static Layer random(String module, int bits, int group, int rows, int in, long seed) {
            Random r = new Random(seed);
            int[][] q = new int[rows][in];
            for (int[] row : q) for (int c = 0; c < in; c++) row[c] = r.nextInt(1 << bits);
            int groups = rows * in / group;
            short[] scales = new short[groups];
            short[] biases = new short[groups];
            for (int g = 0; g < groups; g++) {
                scales[g] = Float.floatToFloat16((r.nextFloat() + 0.05f) / 40);
                biases[g] = Float.floatToFloat16(-r.nextFloat() * 0.9f);
            }
            return new Layer(module, bits, group, rows, in, q, scales, biases);
        }

        /** Value c of row r at bits c*bits.. of the row's little-endian 32-bit words (MLX's packing). */
        byte[] packed() {
            int words = in * bits / 32;
            ByteBuffer out = ByteBuffer.allocate(rows * words * 4).order(ByteOrder.LITTLE_ENDIAN);
            for (int r = 0; r < rows; r++) {
                long[] w = new long[words];
                for (int c = 0; c < in; c++) {
                    long bit = (long) c * bits;
                    w[(int) (bit >>> 5)] |= ((long) q[r][c] << (bit & 31)) & 0xFFFF_FFFFL;
                    if ((bit & 31) + bits > 32) w[(int) (bit >>> 5) + 1] |= (long) q[r][c] >>> (32 - (bit & 31));
                }
                for (long v : w) out.putInt((int) v);
            }
            return out.array();
        }

        static byte[] halves(short[] v) {
            ByteBuffer out = ByteBuffer.allocate(v.length * 2).order(ByteOrder.LITTLE_ENDIAN);
            for (short s : v) out.putShort(s);
            return out.array();
        }

        float expected(int r, int c) {
            int g = r * (in / group) + c / group;
            float product = f16(Float.float16ToFloat(scales[g]) * q[r][c]);
            return f16(product + Float.float16ToFloat(biases[g]));
        }

        static float f16(float v) {
            return Float.float16ToFloat(Float.floatToFloat16(v));
        }

        void addTo(Map<String, Safetensors.Tensor> tensors) {
            tensors.put(module + ".weight", new Safetensors.Tensor("U32", new long[]{rows, (long) in * bits / 32}, packed()));
            tensors.put(module + ".scales", new Safetensors.Tensor("F16", new long[]{rows, in / group}, halves(scales)));
            tensors.put(module + ".biases", new Safetensors.Tensor("F16", new long[]{rows, in / group}, halves(biases)));
        }
    }

    Path buildPlugin() throws Exception {
        Path source = Release.repository().resolve("examples/mlx-affine");
        String pom = Files.readString(source.resolve("pom.xml"));
        assertThat(pom).as("the example builds against this release")
                .contains("<anamnesis.version>" + Release.version() + "</anamnesis.version>");
        // built in a copy: the test writes nothing into the source tree
        Path project = dir.resolve("mlx-affine");
        try (Stream<Path> files = Files.walk(source)) {
            for (Path p : files.toList()) {
                Path rel = source.relativize(p);
                if (rel.startsWith("target")) continue;
                Path to = project.resolve(rel.toString());
                if (Files.isDirectory(p)) Files.createDirectories(to);
                else Files.copy(p, to, StandardCopyOption.REPLACE_EXISTING);
            }
        }
        Release.FreshMaven maven = new Release.FreshMaven(dir.resolve("maven"));
        Release.Run build = maven.mvn(project, "-q", "package");
        assertThat(build.code()).as(build.output()).isZero();
        assertThat(Files.readString(project.resolve("target/surefire-reports")
                .resolve("TEST-org.example.mlx.MlxAffineDequantizerTest.xml"))).contains("failures=\"0\"", "errors=\"0\"");
        Path jar = project.resolve("target/anamnesis-mlx-affine-1.0.0.jar");
        assertThat(jar).isRegularFile();
        return jar;
    }

    @Test
    void amnFindsThePluginInItsFolderAndThroughAmnPluginsAndRecoversAnMlxFile() throws Exception {
        Path staging = Release.staging();
        assertThat(staging).isDirectory();
        Path jar = buildPlugin();
        Path home = Release.unpack(Files.createDirectories(dir.resolve("unpacked")));
        Path amn = home.resolve("bin/amn");
        Map<String, String> env = Map.of("PATH", Release.pathWithoutJava(dir).toString());

        // without the plugin, nothing claims the packed weights
        Release.Run before = Release.run(dir, env, List.of(amn.toString(), "formats"), 120);
        assertThat(before.code()).as(before.output()).isZero();
        assertThat(before.output()).doesNotContain("org.example.mlx");

        // the image's plugins folder
        Files.copy(jar, home.resolve("plugins").resolve(jar.getFileName()));
        Release.Run formats = Release.run(dir, env, List.of(amn.toString(), "formats"), 120);
        assertThat(formats.code()).as(formats.output()).isZero();
        assertThat(formats.output()).containsPattern("(?m)^  mlx +org\\.example\\.mlx +MLX affine quantization");
        Release.Run version = Release.run(dir, env, List.of(amn.toString(), "--version"), 120);
        assertThat(version.output()).containsPattern("(?m)^  org\\.example\\.mlx +1\\.0\\.0  \\(plugin\\)$");
        Files.delete(home.resolve("plugins").resolve(jar.getFileName()));

        // AMN_PLUGINS, and a recovery checked against MLX's formula
        Path model = Files.createDirectories(dir.resolve("mlx-model"));
        Layer attention = Layer.random("model.layers.0.self_attn.q_proj", 4, 64, 4, 256, 11);
        Layer mlp = Layer.random("model.layers.0.mlp.down_proj", 3, 32, 3, 128, 12);   // a layer of its own (mixed_3_4)
        Map<String, Safetensors.Tensor> tensors = new LinkedHashMap<>();
        attention.addTo(tensors);
        mlp.addTo(tensors);
        byte[] norm = Layer.halves(new short[]{Float.floatToFloat16(1.5f), Float.floatToFloat16(-0.25f)});
        tensors.put("model.norm.weight", new Safetensors.Tensor("F16", new long[]{2}, norm));
        Safetensors.write(model.resolve("model.safetensors"), Map.of("format", "mlx"), tensors);
        Files.writeString(model.resolve("config.json"), """
                {"model_type": "llama",
                 "quantization": {"group_size": 64, "bits": 4,
                                  "model.layers.0.mlp.down_proj": {"group_size": 32, "bits": 3}}}""");

        Map<String, String> withPlugin = new java.util.HashMap<>(env);
        withPlugin.put("AMN_PLUGINS", jar.toString());
        Release.Run parse = Release.run(dir, withPlugin, List.of(amn.toString(), "parse", model.resolve("model.safetensors").toString()), 120);
        assertThat(parse.code()).as(parse.output()).isZero();
        assertThat(parse.output()).contains("mlx", "quantized", "scale", "affine-bias");

        Path out = dir.resolve("recovered.safetensors");
        Release.Run remember = Release.run(dir, withPlugin, List.of(amn.toString(), "remember",
                model.resolve("model.safetensors").toString(), "--to", "f32", "-o", out.toString()), 300);
        assertThat(remember.code()).as(remember.output()).isZero();
        Map<String, Safetensors.Tensor> recovered = Safetensors.read(out);
        assertThat(recovered).containsOnlyKeys("model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.down_proj.weight",
                "model.norm.weight");
        for (Layer l : List.of(attention, mlp)) {
            Safetensors.Tensor t = recovered.get(l.module() + ".weight");
            assertThat(t.dtype()).isEqualTo("F32");
            assertThat(t.shape()).containsExactly(l.rows(), l.in());
            ByteBuffer values = ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN);
            for (int r = 0; r < l.rows(); r++) {
                for (int c = 0; c < l.in(); c++) {
                    assertThat(Float.floatToIntBits(values.getFloat())).as(l.module() + " [" + r + ", " + c + "]")
                            .isEqualTo(Float.floatToIntBits(l.expected(r, c)));
                }
            }
        }
        assertThat(recovered.get("model.norm.weight").data()).isEqualTo(norm);
    }
}
