package io.anamnesis.api;

import io.anamnesis.api.spi.FileProbe;

import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The modules anamnesis itself ships, so that a file whose format or scheme has no
 * installed module gets a message naming the one to add, not a shrug. Signatures here are
 * only for that message; the format modules own their real detection.
 */
final class KnownModules {
    private KnownModules() {
    }

    private static final Map<String, String> FORMAT_MODULES = Map.of(
            "safetensors", "format-safetensors",
            "gguf", "format-gguf",
            "npz", "format-npz",
            "pth", "format-pth");

    private static final Map<String, String> SCHEME_MODULES = Map.of(
            "fp8", "quant-fp8",
            "gptq", "quant-gptq",
            "awq", "quant-awq",
            "bnb", "quant-bnb",
            "gguf", "quant-gguf",
            "compressed-tensors", "quant-compressed-tensors",
            "mxfp4", "quant-mxfp4");

    /** quant_method values whose scheme goes by another name. */
    private static final Map<String, String> METHOD_SCHEMES = Map.of("bitsandbytes", "bnb");

    /** "add io.anamnesis:anamnesis-format-gguf (module io.anamnesis.format.gguf)". */
    static String addHint(String folder) {
        return "add io.anamnesis:anamnesis-" + folder + " (module io.anamnesis." + folder.replace('-', '.') + ")";
    }

    static Optional<String> formatModule(String format) {
        return Optional.ofNullable(FORMAT_MODULES.get(format.toLowerCase(Locale.ROOT)));
    }

    static Optional<String> schemeModule(String scheme) {
        return Optional.ofNullable(SCHEME_MODULES.get(scheme.toLowerCase(Locale.ROOT)));
    }

    /**
     * The module whose quantizer takes a {@code forget --to} target, for a message when it is
     * not installed: bitsandbytes' and FP8's names, and ggml's types and llama-quantize's
     * file types (q4_k_m, iq2_xs, ggml:q8_0, ...).
     */
    static Optional<String> targetModule(String target) {
        String t = target.toLowerCase(Locale.ROOT);
        if (t.equals("nf4") || t.equals("fp4") || t.equals("int8")) return Optional.of("quant-bnb");
        if (t.equals("fp8") || t.startsWith("fp8_")) return Optional.of("quant-fp8");
        if (t.startsWith("ggml:") || t.matches("(q|iq|tq)[0-9].*|mxfp4(_moe)?|nvfp4|f16|bf16|f32")) return Optional.of("quant-gguf");
        return Optional.empty();
    }

    /** A best guess at a file's format from its first bytes and extension, for error messages. */
    static Optional<String> guessFormat(FileProbe probe) {
        if (probe.startsWith((byte) 'G', (byte) 'G', (byte) 'U', (byte) 'F')
                || probe.startsWith((byte) 'F', (byte) 'U', (byte) 'G', (byte) 'G')) {
            return Optional.of("gguf");
        }
        if (probe.startsWith((byte) 0x93, (byte) 'N', (byte) 'U', (byte) 'M', (byte) 'P', (byte) 'Y')) {
            return Optional.of("npz");
        }
        if (probe.startsWith((byte) 'P', (byte) 'K', (byte) 3, (byte) 4)) {
            String head = new String(bytes(probe), StandardCharsets.ISO_8859_1);
            if (head.contains("data.pkl")) return Optional.of("pth");
            if (head.contains(".npy")) return Optional.of("npz");
        }
        if (probe.startsWith((byte) 0x80) && probe.size() > 2) return Optional.of("pth");
        if (probe.head().limit() > 8 && probe.head().get(8) == '{') return Optional.of("safetensors");
        return switch (probe.extension()) {
            case "safetensors" -> Optional.of("safetensors");
            case "gguf" -> Optional.of("gguf");
            case "npz", "npy" -> Optional.of("npz");
            case "pth", "pt", "bin", "ckpt" -> Optional.of("pth");
            default -> Optional.empty();
        };
    }

    private static byte[] bytes(FileProbe probe) {
        var b = probe.bytes();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }

    /**
     * Why a stored tensor that no dequantizer claimed still looks quantized.
     *
     * @param scheme the scheme it suggests ("gptq or awq" when the names cannot tell)
     * @param why    what gives it away
     */
    record Suspect(String scheme, String why) {
    }

    /**
     * The scheme a stored tensor suggests when no dequantizer claimed it: companion names
     * that only quantized checkpoints use, packed payloads beside their scales, FP8 weights
     * (whose scale is missing, or was not recovered), or a block dtype.
     *
     * @param byName every tensor of the archive, for the companions a verdict depends on
     */
    static Optional<Suspect> suspect(TensorEntry e, Map<String, TensorEntry> byName) {
        String n = e.name();
        if (e.dtype().kind() == DType.Kind.QUANTIZED) return Optional.of(new Suspect("gguf", "a ggml block type"));
        if (n.endsWith(".qweight") || n.endsWith(".qzeros") || n.endsWith(".g_idx")) {
            return Optional.of(new Suspect("gptq or awq", "a packed GPTQ/AWQ tensor"));
        }
        if (n.endsWith(".weight_packed")) return Optional.of(new Suspect("compressed-tensors", "a packed weight payload"));
        for (String[] pair : new String[][]{{"_blocks", "_scales"}, {".blocks", ".scales"}}) {
            if (n.endsWith(pair[0]) && e.dtype().equals(DType.U8)
                    && byName.containsKey(n.substring(0, n.length() - pair[0].length()) + pair[1])) {
                return Optional.of(new Suspect("mxfp4", "MXFP4 blocks beside their scales"));
            }
        }
        if (isFloat8(e.dtype()) && n.endsWith("weight")) {
            String prefix = n.endsWith(".weight") ? n.substring(0, n.length() - ".weight".length()) : "";
            boolean scaled = byName.containsKey(prefix + ".weight_scale") || byName.containsKey(prefix + ".weight_scale_inv");
            return Optional.of(new Suspect("fp8", scaled ? "an FP8 weight" : "an FP8 weight whose scale is missing"));
        }
        if (n.endsWith(".weight_scale_inv") || (n.endsWith(".weight_scale") && e.shape().elementCount() > 0)) {
            String suffix = n.endsWith(".weight_scale_inv") ? ".weight_scale_inv" : ".weight_scale";
            TensorEntry weight = byName.get(n.substring(0, n.length() - suffix.length()) + ".weight");
            // beside a 16- or 32-bit float weight a scale is a leftover of a dense (frozen) checkpoint
            if (weight == null || !isWideFloat(weight.dtype())) return Optional.of(new Suspect("fp8", "a weight scale"));
        }
        if (n.endsWith(".SCB") || n.contains(".quant_state.bitsandbytes") || n.endsWith(".weight.absmax")) {
            return Optional.of(new Suspect("bnb", "a bitsandbytes companion"));
        }
        return Optional.empty();
    }

    /** Whether a dequantizer for the suspected scheme (either of "gptq or awq") is installed. */
    static boolean installed(String suspected, java.util.Set<String> installedSchemes) {
        for (String s : suspected.split(" or ")) {
            if (installedSchemes.contains(s)) return true;
        }
        return false;
    }

    /** "it has no weight 'x.weight'" for a companion whose quantized tensor is not stored. */
    static Optional<String> missingCompanion(TensorEntry e, java.util.Set<String> stored) {
        String n = e.name();
        for (String suffix : new String[]{".weight_scale_inv", ".weight_scale", ".qzeros", ".scales", ".g_idx", ".SCB"}) {
            if (!n.endsWith(suffix)) continue;
            String stem = n.substring(0, n.length() - suffix.length());
            String payload = stem + (suffix.startsWith(".weight") || suffix.equals(".SCB") ? ".weight" : ".qweight");
            if (!stored.contains(payload)) return Optional.of("it has no " + payload + " to belong to");
        }
        return Optional.empty();
    }

    /** Libraries the shipped modules use, by package, with the artifact that holds them. */
    private static final Map<String, String> LIBRARIES = Map.of(
            "com/fasterxml/jackson/core/", "com.fasterxml.jackson.core:jackson-core",
            "com/fasterxml/jackson/databind/", "com.fasterxml.jackson.core:jackson-databind",
            "org/apache/commons/compress/", "org.apache.commons:commons-compress",
            "org/apache/commons/io/", "commons-io:commons-io",
            "org/apache/commons/lang3/", "org.apache.commons:commons-lang3");

    /**
     * A provider that cannot find a library it was built against (a jar left off the class
     * path) fails with a {@link LinkageError}, which says nothing to the caller; this says
     * which jar to add.
     */
    static UnsupportedFeatureException missingLibrary(LinkageError e, Object provider) {
        String missing = String.valueOf(e.getMessage()).replace('.', '/');
        String artifact = LIBRARIES.entrySet().stream().filter(l -> missing.contains(l.getKey()))
                .map(Map.Entry::getValue).findFirst().orElse(null);
        String who = provider == null ? "an installed module" : Anamnesis.moduleOf(provider) + " (" + provider.getClass().getSimpleName() + ")";
        return new UnsupportedFeatureException(who + " needs a library that is not installed: "
                + (artifact != null ? "add " + artifact : "class " + missing.replace('/', '.') + " is missing")
                + " to the class path or module path", e);
    }

    /** A dtype packed or quantized payloads come in: 8 bits or fewer, or 32-bit ints of a matrix. */
    static boolean looksPacked(TensorEntry e) {
        DType d = e.dtype();
        if (d.kind() == DType.Kind.QUANTIZED || d.kind() == DType.Kind.COMPLEX || d.kind() == DType.Kind.BOOL) {
            return d.kind() == DType.Kind.QUANTIZED;
        }
        int bits = d.blockBytes() * 8 / d.blockElements();
        return bits <= 8 || (bits == 32 && d.kind() != DType.Kind.FLOAT && e.shape().rank() >= 2);
    }

    private static boolean isFloat8(DType d) {
        return d.equals(DType.F8_E4M3) || d.equals(DType.F8_E5M2) || d.equals(DType.F8_E4M3FNUZ) || d.equals(DType.F8_E5M2FNUZ);
    }

    private static boolean isWideFloat(DType d) {
        return d.equals(DType.F16) || d.equals(DType.BF16) || d.equals(DType.F32) || d.equals(DType.F64);
    }

    /**
     * The scheme a quantization config's {@code quant_method} names, or "" when it names none
     * a message could carry: a method is a short identifier, and a hostile file's 8 MB
     * "method" must not be repeated in every problem.
     */
    static String schemeOfMethod(String method) {
        if (method.length() > 64 || !method.matches("[a-z0-9_.+-]*")) return "";
        return METHOD_SCHEMES.getOrDefault(method, method);
    }

    /**
     * What to do about a suspected scheme: add the module that recovers it when that module
     * is not installed; when it is, say what is wrong instead ({@code why}).
     */
    static String schemeHint(String suspected, java.util.Set<String> installed, String why) {
        java.util.List<String> missing = new java.util.ArrayList<>();
        for (String s : suspected.split(" or ")) {
            if (!installed.contains(s)) missing.add(s);
        }
        if (missing.isEmpty()) {
            return "the installed " + suspected.replace(" or ", " and ") + " dequantizer"
                    + (suspected.contains(" or ") ? "s" : "") + " did not recover it: " + why;
        }
        java.util.List<String> hints = new java.util.ArrayList<>();
        for (String s : missing) hints.add(schemeModule(s).map(KnownModules::addHint).orElse("add a module that recovers " + s));
        return "no installed dequantizer recovers it: " + String.join(" or ", hints);
    }
}
