package io.anamnesis.quant.bnb;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Role;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
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
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * bitsandbytes checkpoints as {@code transformers} saves them.
 *
 * <p>4-bit (NF4, FP4), found by its {@code <w>.quant_state.bitsandbytes__nf4|__fp4} blob:
 * {@code <w>} packed codes, {@code <w>.absmax} (F32, or U8 with double quantization),
 * {@code <w>.quant_map} (F32 [16]) and for double quantization {@code <w>.nested_absmax}
 * (F32) and {@code <w>.nested_quant_map} (F32 [256]). The output is {@code <w>} in the
 * blob's {@code shape}.
 *
 * <p>LLM.int8(), found by its {@code <p>.SCB}: {@code <p>.weight} I8 {@code [out, in]},
 * {@code <p>.SCB} F32 {@code [out]}, optionally {@code <p>.weight_format} (must say row).
 */
public final class BnbDequantizer implements Dequantizer {
    static final String NF4_STATE = ".quant_state.bitsandbytes__nf4";
    static final String FP4_STATE = ".quant_state.bitsandbytes__fp4";

    /** bitsandbytes' {@code LINEAR_8BIT_WEIGHTS_FORMAT_MAPPING}: row 0, col32 1, col_turing 2, col_ampere 3. */
    private static final List<String> INT8_FORMATS = List.of("row", "col32", "col_turing", "col_ampere");

    @Override
    public String scheme() {
        return "bnb";
    }

    @Override
    public String description() {
        return "bitsandbytes NF4 / FP4 (block-wise, double quantization) and LLM.int8() row-wise int8";
    }

    @Override
    public List<Recovery> claim(ClaimContext context) {
        TensorArchive archive = context.archive();
        Map<String, TensorEntry> byName = new LinkedHashMap<>();
        for (TensorEntry e : archive.tensors()) byName.put(e.name(), e);

        List<Recovery> out = new ArrayList<>();
        Set<String> fourBitWeights = new HashSet<>();
        for (TensorEntry e : byName.values()) {
            String n = e.name();
            boolean nf4 = n.endsWith(NF4_STATE);
            if (!nf4 && !n.endsWith(FP4_STATE)) continue;
            String weight = n.substring(0, n.length() - (nf4 ? NF4_STATE : FP4_STATE).length());
            out.add(fourBit(archive, context.limits(), byName, weight, e, nf4 ? "nf4" : "fp4"));
            fourBitWeights.add(weight);
        }
        for (TensorEntry e : byName.values()) {
            String n = e.name();
            for (String companion : List.of(".absmax", ".quant_map")) {
                if (!n.endsWith(companion)) continue;
                String weight = n.substring(0, n.length() - companion.length());
                if (byName.containsKey(weight) && !fourBitWeights.contains(weight)) {
                    throw MalformedFileException.inTensor(weight, "has bitsandbytes companion " + n
                            + " but no " + weight + NF4_STATE + " (or __fp4) quant state");
                }
            }
        }
        for (TensorEntry e : byName.values()) {
            if (e.name().endsWith(".SCB")) out.add(int8(archive, byName, e));
        }
        return out;
    }

    // ------------------------------------------------------------------ 4-bit

    private static Recovery fourBit(TensorArchive archive, ParseLimits limits, Map<String, TensorEntry> byName,
                                    String weightName, TensorEntry stateEntry, String suffixType) {
        String stateName = stateEntry.name();
        if (!stateEntry.dtype().isByteSized() || stateEntry.dtype().elementBytes() != 1) {
            throw MalformedFileException.inTensor(stateName, "quant state is " + stateEntry.dtype()
                    + ", expected U8 bytes of JSON");
        }
        ParseLimits.check("size of quant state " + stateName, stateEntry.byteSize(),
                Math.min(limits.maxStringBytes(), limits.maxHeaderBytes()));
        QuantState qs = QuantState.parse(stateName, readSmall(archive, stateEntry), limits);
        if (!qs.quantType().equals(suffixType)) {
            throw MalformedFileException.inTensor(stateName, "quant state says quant_type "
                    + qs.quantType() + " but its name says " + suffixType);
        }

        TensorEntry weight = require(byName, weightName, stateName);
        TensorEntry absmax = require(byName, weightName + ".absmax", weightName);
        TensorEntry quantMap = require(byName, weightName + ".quant_map", weightName);

        long n = qs.elements();
        if (!weight.dtype().isByteSized() || weight.byteSize() != (n + 1) / 2) {
            throw MalformedFileException.inTensor(weightName, "holds " + weight.byteSize() + " bytes ("
                    + weight.dtype() + " " + weight.shape() + "), but the quant state shape " + qs.shape()
                    + " packs into " + (n + 1) / 2 + " bytes (two 4-bit codes a byte)");
        }
        checkF32(quantMap, 16, "a 4-bit code book of 16 entries");
        long blocks = ceilDiv(n, qs.blocksize());

        Map<String, Role> inputs = new LinkedHashMap<>();
        inputs.put(weightName, Role.QUANTIZED);
        inputs.put(absmax.name(), Role.ABSMAX);
        inputs.put(quantMap.name(), Role.QUANT_MAP);

        String type = qs.quantType().toUpperCase(Locale.ROOT);
        String description = "bitsandbytes " + type + ", block " + qs.blocksize();
        Optional<TensorEntry> nestedAbsmax = Optional.ofNullable(byName.get(weightName + ".nested_absmax"));
        Optional<TensorEntry> nestedMap = Optional.ofNullable(byName.get(weightName + ".nested_quant_map"));
        Optional<NestedInputs> nested = Optional.empty();
        if (qs.nested().isPresent()) {
            QuantState.Nested nq = qs.nested().get();
            TensorEntry na = require(byName, weightName + ".nested_absmax", weightName);
            TensorEntry nm = require(byName, weightName + ".nested_quant_map", weightName);
            if (!absmax.dtype().equals(DType.U8) || absmax.elementCount() != blocks) {
                throw MalformedFileException.inTensor(absmax.name(), "is " + absmax.dtype() + " " + absmax.shape()
                        + "; double quantization needs U8 codes, one per block: " + blocks + " for "
                        + n + " elements in blocks of " + qs.blocksize());
            }
            checkF32(na, ceilDiv(blocks, nq.blocksize()), "one scale per " + nq.blocksize() + " absmax codes");
            checkF32(nm, 256, "an 8-bit code book of 256 entries");
            inputs.put(na.name(), Role.ABSMAX);
            inputs.put(nm.name(), Role.QUANT_MAP);
            nested = Optional.of(new NestedInputs(na, nm, nq.blocksize(), nq.offset()));
            description += ", double-quant (nested " + nq.blocksize() + ")";
        } else {
            if (nestedAbsmax.isPresent() || nestedMap.isPresent()) {
                String which = nestedAbsmax.or(() -> nestedMap).get().name();
                throw MalformedFileException.inTensor(which, "is present but the quant state "
                        + stateName + " has no nested_blocksize/nested_offset");
            }
            checkF32(absmax, blocks, "one absmax per block: " + blocks + " for " + n
                    + " elements in blocks of " + qs.blocksize());
        }
        inputs.put(stateName, Role.QUANT_STATE);

        FourBitKernel kernel = new FourBitKernel(weight, absmax, quantMap, nested, qs.fp4(), qs.blocksize(), n);
        return new Recovery(weightName, qs.shape(), "bnb", description, inputs, kernel);
    }

    private record NestedInputs(TensorEntry absmax, TensorEntry quantMap, int blocksize, float offset) {
    }

    private record FourBitKernel(TensorEntry weight, TensorEntry absmax, TensorEntry quantMap,
                                 Optional<NestedInputs> nested, boolean fp4, int blocksize, long elements)
            implements RecoveryKernel {
        @Override
        public long granule() {
            return blocksize;
        }

        @Override
        public ChunkFiller open(TensorArchive archive, Arena arena, DType target) {
            OutputBits.kind(target);
            MemorySegment packed = data(archive, weight, arena);
            MemorySegment absmaxData = data(archive, absmax, arena);
            float[] values = FourBit.codeValues(floats(data(archive, quantMap, arena)), fp4);
            FourBit.Absmax scales = nested.isPresent()
                    ? new FourBit.NestedAbsmax(absmaxData, data(archive, nested.get().absmax(), arena),
                    floats(data(archive, nested.get().quantMap(), arena)), nested.get().blocksize(), nested.get().offset())
                    : new FourBit.PlainAbsmax(absmaxData);
            return (first, count, dest) ->
                    FourBit.decode(packed, scales, values, blocksize, elements, first, count, target, dest);
        }
    }

    // ------------------------------------------------------------------ LLM.int8()

    private static Recovery int8(TensorArchive archive, Map<String, TensorEntry> byName, TensorEntry scb) {
        String prefix = scb.name().substring(0, scb.name().length() - ".SCB".length());
        String weightName = prefix + ".weight";
        TensorEntry weight = byName.get(weightName);
        if (weight == null) {
            throw MalformedFileException.inTensor(scb.name(), "LLM.int8() row scales without their weight " + weightName);
        }
        if (!weight.dtype().equals(DType.I8) || weight.shape().rank() != 2) {
            throw MalformedFileException.inTensor(weightName, "is " + weight.dtype() + " " + weight.shape()
                    + "; an LLM.int8() weight beside " + scb.name() + " is I8 [out, in]");
        }
        long rows = weight.shape().dim(0);
        checkF32(scb, rows, "one scale per output row: " + rows);

        Map<String, Role> inputs = new LinkedHashMap<>();
        inputs.put(weightName, Role.QUANTIZED);
        inputs.put(scb.name(), Role.SCALE);
        TensorEntry format = byName.get(prefix + ".weight_format");
        if (format != null) {
            long code = readIntegerScalar(archive, format);
            if (code != 0) {
                if (code > 0 && code < INT8_FORMATS.size()) {
                    throw UnsupportedFeatureException.inTensor(format.name(), "LLM.int8() weight format "
                            + INT8_FORMATS.get((int) code) + " (" + code + "); only row (0) layout is supported");
                }
                throw MalformedFileException.inTensor(format.name(), "LLM.int8() weight format " + code
                        + " is none of bitsandbytes' formats (0 row, 1 col32, 2 col_turing, 3 col_ampere)");
            }
            inputs.put(format.name(), Role.QUANT_STATE);
        }
        Int8Kernel kernel = new Int8Kernel(weight, scb, weight.shape().dim(1), weight.elementCount());
        return new Recovery(weightName, weight.shape(), "bnb", "bitsandbytes LLM.int8()", inputs, kernel);
    }

    private record Int8Kernel(TensorEntry weight, TensorEntry scb, long rowLength, long elements)
            implements RecoveryKernel {
        @Override
        public long granule() {
            return Math.max(1, rowLength);
        }

        @Override
        public ChunkFiller open(TensorArchive archive, Arena arena, DType target) {
            OutputBits.kind(target);
            MemorySegment w = data(archive, weight, arena);
            MemorySegment s = data(archive, scb, arena);
            return (first, count, dest) -> Int8Rows.decode(w, s, rowLength, elements, first, count, target, dest);
        }
    }

    /** The value of a one-element integer tensor ({@code weight_format} is a uint8 scalar). */
    private static long readIntegerScalar(TensorArchive archive, TensorEntry e) {
        DType d = e.dtype();
        boolean integer = d.kind() == DType.Kind.UNSIGNED_INT || d.kind() == DType.Kind.SIGNED_INT;
        if (!integer || e.elementCount() != 1 || !d.isByteSized()) {
            throw MalformedFileException.inTensor(e.name(), "is " + d + " " + e.shape()
                    + ", expected one integer naming the LLM.int8() weight format");
        }
        byte[] b = readSmall(archive, e);
        long v = 0;
        for (int i = b.length - 1; i >= 0; i--) v = (v << 8) | (b[i] & 0xFF);
        if (d.kind() == DType.Kind.SIGNED_INT && b.length < 8) v = (v << (64 - 8 * b.length)) >> (64 - 8 * b.length);
        return v;
    }

    // ------------------------------------------------------------------ helpers

    private static TensorEntry require(Map<String, TensorEntry> byName, String name, String owner) {
        TensorEntry e = byName.get(name);
        if (e == null) {
            throw MalformedFileException.inTensor(owner, "bitsandbytes group lacks its companion " + name);
        }
        return e;
    }

    private static void checkF32(TensorEntry e, long elements, String what) {
        if (!e.dtype().equals(DType.F32) || e.elementCount() != elements) {
            throw MalformedFileException.inTensor(e.name(), "is " + e.dtype() + " " + e.shape()
                    + ", expected F32 with " + elements + " elements (" + what + ")");
        }
    }

    private static long ceilDiv(long a, long b) {
        return a == 0 ? 0 : (a - 1) / b + 1;
    }

    /** A small companion's bytes (quant state, weight format), read through a confined arena. */
    private static byte[] readSmall(TensorArchive archive, TensorEntry e) {
        try (Arena arena = Arena.ofConfined()) {
            return data(archive, e, arena).toArray(ValueLayout.JAVA_BYTE);
        }
    }

    private static MemorySegment data(TensorArchive archive, TensorEntry e, Arena arena) {
        MemorySegment s = archive.data(e, arena);
        if (s.byteSize() != e.byteSize()) {
            throw MalformedFileException.inTensor(e.name(), "holds " + s.byteSize() + " bytes, its dtype and shape need "
                    + e.byteSize());
        }
        return s;
    }

    private static float[] floats(MemorySegment s) {
        float[] f = new float[(int) (s.byteSize() / 4)];
        for (int i = 0; i < f.length; i++) f[i] = s.get(LittleEndian.F32, 4L * i);
        return f;
    }
}
