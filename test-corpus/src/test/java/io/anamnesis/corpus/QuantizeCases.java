package io.anamnesis.corpus;


import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The quantize families through the API and the CLI alike: what each case asks for, the
 * inputs issue 11 says to give it (only {@code weight} of a ggml-quantize input, its
 * {@code imatrix} tensor as a legacy {@code .dat} with one entry named after the tensor,
 * ncall 1), and the comparison with {@code expected.gguf} read by {@link ReferenceGguf}.
 */
final class QuantizeCases {
    private QuantizeCases() {
    }

    static boolean isGgml(CorpusCase c) {
        return c.family().equals("ggml-quantize");
    }

    /** The --to of a case: the ggml type itself for ggml-quantize, the llama-quantize file type otherwise. */
    static String target(CorpusCase c) {
        return isGgml(c) ? "ggml:" + c.json().path("params").path("ggml_type").asText().toLowerCase() : c.json().path("scheme").asText();
    }

    static boolean hasImatrix(CorpusCase c) {
        return isGgml(c) ? !c.json().path("params").path("imatrix").isNull() && c.json().path("params").has("imatrix")
                : Files.isRegularFile(c.dir().resolve("imatrix.gguf"));
    }

    static Path expected(CorpusCase c) {
        return c.dir().resolve("expected.gguf");
    }

    /** A copy of a ggml-quantize input with {@code weight} alone, in safetensors. */
    static Path weightOnly(CorpusCase c, Path dir) throws IOException {
        ReferenceSafetensors.Tensor w = ReferenceSafetensors.read(c.input()).get("weight");
        String header = "{\"weight\":{\"dtype\":\"" + w.dtype() + "\",\"shape\":[" + w.shape()[0] + "," + w.shape()[1]
                + "],\"data_offsets\":[0," + w.bytes().length + "]}}";
        while (header.length() % 8 != 0) header += " ";
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(le64(header.length()));
        out.writeBytes(header.getBytes(StandardCharsets.UTF_8));
        out.writeBytes(w.bytes());
        return Files.write(dir.resolve("input-weight.safetensors"), out.toByteArray());
    }

    /** The case's {@code imatrix} tensor as a legacy llama.cpp imatrix: one entry, named "weight", ncall 1. */
    static Path legacyImatrix(CorpusCase c, Path dir) throws IOException {
        ReferenceSafetensors.Tensor im = ReferenceSafetensors.read(c.input()).get("imatrix");
        if (!im.dtype().equals("F32")) throw new IOException(c.id() + ": imatrix is " + im.dtype());
        byte[] name = "weight".getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(4 + 4 + name.length + 4 + 4 + im.bytes().length).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(1).putInt(name.length).put(name).putInt(1).putInt(im.bytes().length / 4).put(im.bytes());
        return Files.write(dir.resolve("imatrix.dat"), b.array());
    }

    private static byte[] le64(long v) {
        return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
    }

    /** ggml-quantize: tensor {@code weight} of the output has the expected type, ne and bytes. */
    static void compareWeight(CorpusCase c, Path out) throws IOException {
        ReferenceGguf.Tensor want = ReferenceGguf.read(expected(c)).tensor("weight");
        ReferenceGguf.Tensor got = ReferenceGguf.read(out).tensor("weight");
        compareTensor(c, want, got);
    }

    /**
     * llama-quantize: every tensor (order, type, ne, bytes) and every key/value as
     * {@code expected.gguf} has them, {@code quantize.imatrix.file} aside (the path given
     * differs); without an importance matrix the whole file, by its sha256 in case.json.
     */
    static void compareModel(CorpusCase c, Path out, Optional<String> imatrixFile) throws IOException {
        ReferenceGguf want = ReferenceGguf.read(expected(c));
        ReferenceGguf got = ReferenceGguf.read(out);
        assertThat(got.tensors.stream().map(ReferenceGguf.Tensor::name).toList()).as(c.id() + " tensor order")
                .isEqualTo(want.tensors.stream().map(ReferenceGguf.Tensor::name).toList());
        for (ReferenceGguf.Tensor w : want.tensors) compareTensor(c, w, got.tensor(w.name()));
        assertThat(got.kv.get("general.file_type").asLong()).as(c.id() + " general.file_type")
                .isEqualTo(c.json().path("params").path("ftype_id").asLong());
        assertThat(List.copyOf(got.kv.keySet())).as(c.id() + " key order").isEqualTo(List.copyOf(want.kv.keySet()));
        for (Map.Entry<String, ReferenceGguf.Kv> e : want.kv.entrySet()) {
            ReferenceGguf.Kv g = got.kv.get(e.getKey());
            assertThat(g.type()).as(c.id() + " type of " + e.getKey()).isEqualTo(e.getValue().type());
            if (e.getKey().equals("quantize.imatrix.file")) {
                String given = imatrixFile.orElseThrow();
                // llama-quantize keeps 127 bytes of it (strncpy into a 128-byte buffer)
                assertThat(g.asString()).as(c.id() + " quantize.imatrix.file").isEqualTo(given.substring(0, Math.min(127, given.length())));
                continue;
            }
            assertThat(g.value()).as(c.id() + " value of " + e.getKey()).isEqualTo(e.getValue().value());
        }
        if (imatrixFile.isEmpty() || imatrixFile.get().equals(c.json().path("params").path("imatrix").path("file").asText())) {
            assertThat(sha256(out)).as(c.id() + ": the whole file, byte for byte")
                    .isEqualTo(c.json().path("files").path("expected.gguf").path("sha256").asText());
        }
    }

    static void compareTensor(CorpusCase c, ReferenceGguf.Tensor want, ReferenceGguf.Tensor got) {
        String what = c.id() + " " + want.name();
        assertThat(ReferenceGguf.NAMES.get(got.type())).as(what + " type").isEqualTo(ReferenceGguf.NAMES.get(want.type()));
        assertThat(got.ne()).as(what + " ne").isEqualTo(want.ne());
        if (!java.util.Arrays.equals(got.bytes(), want.bytes())) {
            int[] g = ReferenceGguf.GEOMETRY.get(want.type());
            int i = java.util.Arrays.mismatch(got.bytes(), want.bytes());
            fail("%s: bytes differ from byte %d on (block %d of %d bytes, row length %d)", what, i, i / g[1], g[1], want.ne()[0]);
        }
    }

    static String sha256(Path file) throws IOException {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The --tokens of a case's llama_run, comma-separated. */
    static String tokens(CorpusCase c) {
        List<String> t = new ArrayList<>();
        c.json().path("params").path("llama_run").path("tokens").forEach(n -> t.add(n.asText()));
        return String.join(",", t);
    }
}
