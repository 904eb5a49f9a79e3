package io.anamnesis.quant.bnb;

import io.anamnesis.api.DType;
import io.anamnesis.api.InvalidRequestException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.config.QuantizationConfig;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.json.Json;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.ClaimContext;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * How to quantize, per tensor: from the command line's settings (every linear layer the same
 * way) or read from a published checkpoint ({@code forget --like}), whose quant states,
 * companion tensors and config say it all.
 *
 * @param target              nf4, fp4 or int8
 * @param uniform             the spec of every linear layer, from the settings; empty when imitating
 * @param perTensor           the spec of each tensor the reference quantizes, by weight name
 * @param quantizationConfig  the reference's {@code quantization_config}, JSON, kept as it is
 * @param reference           where the recipe came from, for messages ("the settings", a file name)
 */
record BnbRecipe(String target, Optional<Spec> uniform, Map<String, Spec> perTensor,
                 Optional<String> quantizationConfig, String reference) {

    /** One tensor's encoding. */
    sealed interface Spec permits FourBitSpec, Int8Spec {
        /** The shape the reference stores it in, when imitating. */
        Optional<Shape> shape();

        /** "nf4", "fp4" or "int8". */
        String type();
    }

    /**
     * @param fp4         FP4 rather than NF4
     * @param blocksize   elements per absmax block
     * @param dtype       the quant state's {@code dtype}; empty: the tensor's own (bitsandbytes records the input dtype)
     * @param nested      double quantization, with its 8-bit code book
     */
    record FourBitSpec(boolean fp4, int blocksize, Optional<String> dtype, Optional<float[]> nested,
                       Optional<Shape> shape) implements Spec {
        @Override
        public String type() {
            return fp4 ? "fp4" : "nf4";
        }

        String describe() {
            return "bitsandbytes " + type().toUpperCase(Locale.ROOT) + ", block " + blocksize
                    + (nested.isPresent() ? ", double-quant (nested " + DoubleQuant.NESTED_BLOCKSIZE + ")" : "");
        }
    }

    /** @param weightFormat whether to write the {@code weight_format} companion bitsandbytes adds */
    record Int8Spec(boolean weightFormat, Optional<Shape> shape) implements Spec {
        @Override
        public String type() {
            return "int8";
        }
    }

    /** bitsandbytes' block sizes for 4-bit ({@code quantize_4bit}): powers of two from 32 to 4096. */
    static final int MIN_BLOCKSIZE = 32;
    static final int MAX_BLOCKSIZE = 4096;

    /** The settings of {@code amn forget --to nf4|fp4|int8}. */
    static BnbRecipe fromSettings(String target, Map<String, String> settings) {
        Map<String, String> s = new LinkedHashMap<>(settings);
        Spec spec;
        if (target.equals("int8")) {
            for (String key : s.keySet()) {
                throw new InvalidRequestException("LLM.int8() quantizes whole rows with one scale each: it takes no --"
                        + key);
            }
            spec = new Int8Spec(true, Optional.empty());
        } else {
            int blocksize = 64;
            String bs = s.remove("block-size");
            if (bs != null) blocksize = blocksize(bs);
            String dq = s.remove("double-quant");
            boolean doubleQuant = dq != null && !dq.equalsIgnoreCase("false");
            for (String key : s.keySet()) {
                throw new InvalidRequestException("bitsandbytes " + target + " takes --block-size and --double-quant, not --"
                        + key);
            }
            spec = new FourBitSpec(target.equals("fp4"), blocksize, Optional.empty(),
                    doubleQuant ? Optional.of(DoubleQuant.dynamicMap()) : Optional.empty(), Optional.empty());
        }
        return new BnbRecipe(target, Optional.of(spec), Map.of(), Optional.empty(), "the settings");
    }

    static int blocksize(String text) {
        long v;
        try {
            v = Long.parseLong(text.trim());
        } catch (NumberFormatException e) {
            throw new InvalidRequestException("block size '" + text + "' is not a number");
        }
        if (v < MIN_BLOCKSIZE || v > MAX_BLOCKSIZE || Long.bitCount(v) != 1) {
            throw new InvalidRequestException("block size " + v + " is not one bitsandbytes quantizes with: a power"
                    + " of two from " + MIN_BLOCKSIZE + " to " + MAX_BLOCKSIZE + " (64 unless given)");
        }
        return (int) v;
    }

    /** The first bitsandbytes quant type a reference holds: nf4, fp4 or int8. */
    static Optional<String> typeOf(TensorArchive reference) {
        Map<String, TensorEntry> byName = byName(reference);
        for (TensorEntry e : reference.tensors()) {
            String n = e.name();
            if (n.endsWith(BnbDequantizer.NF4_STATE)) return Optional.of("nf4");
            if (n.endsWith(BnbDequantizer.FP4_STATE)) return Optional.of("fp4");
            if (n.endsWith(".SCB") && byName.containsKey(n.substring(0, n.length() - 4) + ".weight")) {
                return Optional.of("int8");
            }
        }
        return Optional.empty();
    }

    /**
     * Reads the recipe of a bitsandbytes checkpoint: every 4-bit quant state and every int8
     * {@code SCB} names a tensor to quantize, with its type, block size, double quantization,
     * quant state dtype and shape.
     *
     * @throws UnsupportedFeatureException for a code book other than bitsandbytes' own, or a mix of nf4, fp4 and int8
     * @throws MalformedFileException      for a quant state or companion that does not parse
     */
    static BnbRecipe read(TensorArchive reference, ParseLimits limits) {
        String name = reference.path().map(p -> p.getFileName().toString()).orElse("the reference");
        Map<String, TensorEntry> byName = byName(reference);
        Map<String, Spec> perTensor = new LinkedHashMap<>();
        String target = null;
        for (TensorEntry e : reference.tensors()) {
            String n = e.name();
            Spec spec;
            String weight;
            if (n.endsWith(BnbDequantizer.NF4_STATE) || n.endsWith(BnbDequantizer.FP4_STATE)) {
                weight = n.substring(0, n.lastIndexOf(".quant_state."));
                spec = fourBit(reference, limits, byName, weight, e);
            } else if (n.endsWith(".SCB") && byName.containsKey(n.substring(0, n.length() - 4) + ".weight")) {
                String prefix = n.substring(0, n.length() - 4);
                weight = prefix + ".weight";
                TensorEntry w = byName.get(weight);
                if (!w.dtype().equals(DType.I8) || w.shape().rank() != 2) {
                    throw MalformedFileException.inTensor(weight, "is " + w.dtype() + " " + w.shape()
                            + "; an LLM.int8() weight beside " + n + " is I8 [out, in]");
                }
                spec = new Int8Spec(byName.containsKey(prefix + ".weight_format"), Optional.of(w.shape()));
            } else {
                continue;
            }
            if (target == null) target = spec.type();
            else if (!target.equals(spec.type())) {
                throw new UnsupportedFeatureException(name + " mixes bitsandbytes " + target + " and " + spec.type()
                        + " tensors; forget --like writes one quant type");
            }
            perTensor.put(weight, spec);
        }
        if (target == null) {
            throw new UnsupportedFeatureException(name + " holds no bitsandbytes tensor to imitate");
        }
        return new BnbRecipe(target, Optional.empty(), perTensor, quantizationConfig(reference, limits), name);
    }

    private static FourBitSpec fourBit(TensorArchive reference, ParseLimits limits, Map<String, TensorEntry> byName,
                                       String weight, TensorEntry stateEntry) {
        ParseLimits.check("size of quant state " + stateEntry.name(), stateEntry.byteSize(),
                Math.min(limits.maxStringBytes(), limits.maxHeaderBytes()));
        QuantState qs = QuantState.parse(stateEntry.name(), bytes(reference, stateEntry), limits);
        TensorEntry map = require(byName, weight + ".quant_map");
        float[] book = floats(reference, map, 16);
        float[] standard = qs.fp4() ? FourBitEncoder.FP4_MAP : FourBitEncoder.NF4_MAP;
        if (!sameBits(book, standard)) {
            throw UnsupportedFeatureException.inTensor(map.name(), "is not bitsandbytes' " + qs.quantType().toUpperCase(Locale.ROOT)
                    + " code book; its encoder's decisions are defined for that one only");
        }
        Optional<float[]> nested = Optional.empty();
        if (qs.nested().isPresent()) {
            if (qs.nested().get().blocksize() != DoubleQuant.NESTED_BLOCKSIZE) {
                throw UnsupportedFeatureException.inTensor(stateEntry.name(), "nested_blocksize "
                        + qs.nested().get().blocksize() + ": bitsandbytes double-quantizes in blocks of "
                        + DoubleQuant.NESTED_BLOCKSIZE + " only");
            }
            float[] nestedBook = floats(reference, require(byName, weight + ".nested_quant_map"), 256);
            try {
                DoubleQuant.boundaries(nestedBook);
            } catch (IllegalArgumentException e) {
                throw UnsupportedFeatureException.inTensor(weight + ".nested_quant_map", e.getMessage()
                        + "; the 8-bit search needs an ascending code book");
            }
            nested = Optional.of(nestedBook);
        }
        return new FourBitSpec(qs.fp4(), qs.blocksize(), Optional.of(qs.dtype()), nested, Optional.of(qs.shape()));
    }

    /**
     * The reference's {@code quantization_config}: its metadata entry as it is, else the one
     * in {@code config.json} beside it, written compactly.
     */
    private static Optional<String> quantizationConfig(TensorArchive reference, ParseLimits limits) {
        String inMetadata = reference.metadata().get("quantization_config");
        if (inMetadata != null) return Optional.of(checkedConfig(inMetadata, limits.maxNestingDepth()));
        Optional<String> config = new ClaimContext(reference, limits).sidecar("config.json");
        if (config.isEmpty()) return Optional.empty();
        Object root;
        try {
            root = Json.parse(config.get(), limits.maxNestingDepth());
        } catch (IllegalArgumentException e) {
            throw new MalformedFileException("config.json beside the reference is not valid JSON: " + e.getMessage());
        }
        return Json.member(root, "quantization_config").filter(q -> q instanceof Map<?, ?>)
                .map(q -> checkedConfig(Json.dumps(Json.wholeNumbersAsLongs(q)), limits.maxNestingDepth()));
    }

    /** The reference's {@code quantization_config}, checked ({@link QuantizationConfig#checkedForCopy}). */
    static String checkedConfig(String text, int maxNesting) {
        return QuantizationConfig.checkedForCopy(text, maxNesting, "bitsandbytes"::equals, "bitsandbytes");
    }

    private static boolean sameBits(float[] a, float[] b) {
        if (a.length != b.length) return false;
        for (int i = 0; i < a.length; i++) {
            if (Float.floatToRawIntBits(a[i]) != Float.floatToRawIntBits(b[i])) return false;
        }
        return true;
    }

    private static Map<String, TensorEntry> byName(TensorArchive archive) {
        Map<String, TensorEntry> m = new LinkedHashMap<>();
        for (TensorEntry e : archive.tensors()) m.putIfAbsent(e.name(), e);
        return m;
    }

    private static TensorEntry require(Map<String, TensorEntry> byName, String name) {
        TensorEntry e = byName.get(name);
        if (e == null) throw MalformedFileException.inTensor(name, "bitsandbytes companion is missing");
        return e;
    }

    private static byte[] bytes(TensorArchive archive, TensorEntry e) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = archive.data(e, arena);
            if (s.byteSize() != e.byteSize()) {
                throw MalformedFileException.inTensor(e.name(), "holds " + s.byteSize() + " bytes, its dtype and shape need "
                        + e.byteSize());
            }
            return s.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    private static float[] floats(TensorArchive archive, TensorEntry e, int count) {
        if (!e.dtype().equals(DType.F32) || e.elementCount() != count) {
            throw MalformedFileException.inTensor(e.name(), "is " + e.dtype() + " " + e.shape() + ", expected F32 with "
                    + count + " elements");
        }
        byte[] b = bytes(archive, e);
        float[] f = new float[count];
        MemorySegment.copy(MemorySegment.ofArray(b), LittleEndian.F32, 0, f, 0, count);
        return f;
    }

    @Override
    public String toString() {
        return "BnbRecipe[" + target + " from " + reference + ", " + perTensor.size() + " tensors"
                + uniform.map(u -> ", " + u.type()).orElse("") + "]";
    }
}
