package io.anamnesis.quant.compressed.tensors;

import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Role;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.numeric.Float8;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.numeric.PackedInts;
import io.anamnesis.api.numeric.ScaleGrid;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.config.QuantizationConfig;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.quant.compressed.tensors.CompressedTensorsConfig.ConfigGroup;
import io.anamnesis.quant.compressed.tensors.CompressedTensorsConfig.WeightArgs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Recovers compressed-tensors checkpoints (llm-compressor's output, what vLLM loads):
 * {@code quantization_config.quant_method = "compressed-tensors"} in the file's metadata or
 * {@code config.json}. Per quantized module {@code <m>}, by the config group that targets it
 * and that group's (or the checkpoint's) {@code format}:
 *
 * <ul>
 * <li>{@code pack-quantized}: {@code <m>.weight_packed} (I32 {@code [rows, ceil(cols*bits/32)]},
 *     LSB first, offset {@code 2^(bits-1)}), {@code <m>.weight_shape}, {@code <m>.weight_scale},
 *     optional {@code <m>.weight_zero_point} (packed along rows) and {@code <m>.weight_g_idx};</li>
 * <li>{@code naive-quantized}, {@code int-quantized}, {@code float-quantized}: {@code <m>.weight}
 *     in I8 or FP8 with its scale (and zero point);</li>
 * <li>{@code nvfp4-pack-quantized}: U8 FP4 E2M1 pairs (low nibble first), FP8 E4M3 scales per
 *     16 divided by {@code <m>.weight_global_scale};</li>
 * <li>{@code mxfp4-pack-quantized} / {@code mxfp8-quantized}: FP4 pairs / FP8 codes with E8M0
 *     scales per 32.</li>
 * </ul>
 *
 * <p>Each becomes {@code <m>.weight [rows, cols]}. Scales cover the tensor, a row, a group of
 * columns or a block, as the group's {@code strategy} says and the scale's shape must agree.
 * Modules in {@code ignore}, dense weights and activation scales pass through. Formats
 * this module does not decode (sparse, Marlin 2:4, unknown names) are refused naming them;
 * shapes that disagree are malformed, both found from the header alone.
 */
public final class CompressedTensorsDequantizer implements Dequantizer {
    static final String SCHEME = "compressed-tensors";

    static final Role SHAPE = new Role("shape");
    static final Role GLOBAL_SCALE = new Role("global-scale");

    private static final List<String> PARTS = List.of("weight_packed", "weight", "weight_scale", "weight_zero_point",
            "weight_g_idx", "weight_shape", "weight_global_scale");

    @Override
    public String scheme() {
        return SCHEME;
    }

    @Override
    public String description() {
        return "compressed-tensors (llm-compressor): pack-quantized int4/int8 (group, channel, act-order, zero points), "
                + "naive/int/float-quantized int8 and FP8, NVFP4, MXFP4, MXFP8";
    }

    @Override
    public List<Recovery> claim(ClaimContext context) {
        TensorArchive archive = context.archive();
        Map<String, TensorEntry> byName = new HashMap<>();
        Set<String> modules = new LinkedHashSet<>();
        for (TensorEntry e : archive.tensors()) {
            byName.putIfAbsent(e.name(), e);
            for (String suffix : List.of(".weight_packed", ".weight_scale")) {
                if (e.name().endsWith(suffix)) modules.add(e.name().substring(0, e.name().length() - suffix.length()));
            }
        }
        if (modules.isEmpty()) return List.of();
        Optional<CompressedTensorsConfig> found = CompressedTensorsConfig.of(QuantizationConfig.find(context));
        if (found.isEmpty()) return List.of();
        CompressedTensorsConfig config = found.get();

        List<Recovery> out = new ArrayList<>();
        for (String module : modules) {
            if (config.ignores(module)) continue;
            Map<String, TensorEntry> parts = new LinkedHashMap<>();
            for (String p : PARTS) {
                TensorEntry e = byName.get(module + "." + p);
                if (e != null) parts.put(p, e);
            }
            TensorEntry packed = parts.get("weight_packed");
            TensorEntry weight = parts.get("weight");
            // a float weight beside its scale is stored dense (a frozen, not compressed, checkpoint)
            if (packed == null && (weight == null || isWide(weight.dtype()))) continue;
            if (config.sparsity().isPresent()) {
                throw UnsupportedFeatureException.inTensor(primary(parts), "compressed-tensors sparsity format '"
                        + config.sparsity().get() + "' (" + config.origin() + ") is not supported");
            }
            if (config.transformed()) {
                throw UnsupportedFeatureException.inTensor(primary(parts), "compressed-tensors transforms (transform_config in "
                        + config.origin() + ") are not supported: the stored weights are rotated");
            }
            boolean storedAsFloat = packed != null ? packed.dtype().equals(DType.U8) : Float8.of(weight.dtype()).isPresent();
            ConfigGroup group = config.groupFor(module, storedAsFloat).orElseThrow(() ->
                    UnsupportedFeatureException.inTensor(primary(parts), "no config group of " + config.origin()
                            + " can be told to target module " + module));
            CompressionFormat format = format(group, config, parts);
            if (format == CompressionFormat.DENSE) continue;
            out.add(recovery(archive, module, parts, format, group.weights().orElseThrow(), context.limits()));
        }
        return out;
    }

    private static boolean isWide(DType dt) {
        return dt.equals(DType.F16) || dt.equals(DType.BF16) || dt.equals(DType.F32) || dt.equals(DType.F64);
    }

    private static String primary(Map<String, TensorEntry> parts) {
        return parts.values().iterator().next().name();
    }

    /** The group's format, else the checkpoint's; refused when unknown or not decoded here. */
    private static CompressionFormat format(ConfigGroup group, CompressedTensorsConfig config, Map<String, TensorEntry> parts) {
        String name = group.format().or(config::format).orElseThrow(() -> UnsupportedFeatureException.inTensor(primary(parts),
                "compressed-tensors config (" + config.origin() + ") names no format for group " + group.name()));
        CompressionFormat f = CompressionFormat.of(name).orElseThrow(() -> UnsupportedFeatureException.inTensor(primary(parts),
                "compressed-tensors format '" + name + "' (" + config.origin() + ") is not supported; supported: "
                        + CompressionFormat.supported()));
        if (f == CompressionFormat.MIXED_PRECISION) {
            throw UnsupportedFeatureException.inTensor(primary(parts), "compressed-tensors group " + group.name()
                    + " of a mixed-precision checkpoint names no format of its own");
        }
        if (!f.recovered()) {
            throw UnsupportedFeatureException.inTensor(primary(parts), "compressed-tensors format '" + name
                    + "' is not supported; supported: " + CompressionFormat.supported());
        }
        return f;
    }

    private static Recovery recovery(TensorArchive archive, String module, Map<String, TensorEntry> parts,
                                     CompressionFormat format, WeightArgs args, ParseLimits limits) {
        return switch (format) {
            case PACK_QUANTIZED -> packQuantized(archive, module, parts, args, limits);
            case NAIVE_QUANTIZED, INT_QUANTIZED, FLOAT_QUANTIZED, MXFP8_QUANTIZED -> naive(module, parts, format, args, limits);
            case NVFP4_PACK_QUANTIZED, MXFP4_PACK_QUANTIZED -> fp4(module, parts, format, args, limits);
            default -> throw new IllegalStateException(format.spelling());
        };
    }

    // ------------------------------------------------------------------ pack-quantized

    private static Recovery packQuantized(TensorArchive archive, String module, Map<String, TensorEntry> parts, WeightArgs args,
                                          ParseLimits limits) {
        TensorEntry packed = require(parts, "weight_packed", module);
        if (args.isFloat()) {
            throw UnsupportedFeatureException.inTensor(packed.name(), "pack-quantized float weights are not a compressed-tensors layout");
        }
        int bits = args.numBits();
        if (bits > 8) throw UnsupportedFeatureException.inTensor(packed.name(), "pack-quantized with " + bits + " bits (1 to 8 are)");
        if (!packed.dtype().equals(DType.I32) && !packed.dtype().equals(DType.U32)) {
            throw MalformedFileException.inTensor(packed.name(), "is " + packed.dtype() + "; pack-quantized weights are I32");
        }
        requireRank(packed, 2);
        long[] shape = weightShape(archive, require(parts, "weight_shape", module));
        long rows = shape[0];
        long cols = shape[1];
        String declared = parts.get("weight_shape").name() + " [" + rows + ", " + cols + "]";
        if (packed.shape().dim(0) != rows) {
            throw MalformedFileException.inTensor(packed.name(), "has " + packed.shape().dim(0) + " rows, " + declared + " says " + rows);
        }
        long words = PackedInts.words(cols, bits);
        if (packed.shape().dim(1) != words) {
            throw MalformedFileException.inTensor(packed.name(), "shape " + packed.shape() + " holds "
                    + packed.shape().dim(1) * 32 / bits + " " + bits + "-bit columns per row; " + declared + " needs "
                    + words + " int32 words per row");
        }
        checkSize(packed, rows, cols, limits);
        TensorEntry scale = require(parts, "weight_scale", module);
        requireScaleDtype(scale, false);
        ScaleGrid grid = grid(args, scale, rows, cols, Optional.empty());
        Optional<TensorEntry> zero = Optional.ofNullable(parts.get("weight_zero_point"));
        boolean zeroPacked = false;
        if (zero.isPresent()) {
            Shape packedZeros = Shape.of(PackedInts.words(grid.scaleRows(), bits), grid.scaleCols());
            // packed along rows as the library packs asymmetric group and channel zero points; the
            // shapes only coincide for a one-row layer, where the config decides
            boolean packedGroupZeros = !args.symmetric() && grid.blockRows() == 1;
            zeroPacked = zero.get().shape().equals(packedZeros)
                    && (!zero.get().shape().equals(scale.shape()) || packedGroupZeros);
            checkZero(zero.get(), scale, zeroPacked, packedZeros);
        }
        Optional<TensorEntry> gIdx = gIdx(parts, cols);
        String what = "int" + bits + ", " + describe(grid) + (gIdx.isPresent() ? ", act-order" : "")
                + (zero.isPresent() ? ", asymmetric" : ", symmetric") + " (" + scale.dtype() + " scales)";
        var kernel = new LayerKernel(packed, LayerData.CodeKind.OFFSET_PACKED, bits, 4 * words, (int) rows, (int) cols, grid,
                scale, false, Optional.empty(), zero, zeroPacked, gIdx);
        return recovery(module, rows, cols, "pack-quantized " + what, kernel, packed, scale, zero, gIdx,
                Optional.of(parts.get("weight_shape")), Optional.empty());
    }

    /** {@code weight_shape}: two non-negative integers, read from the file (16 bytes at most). */
    private static long[] weightShape(TensorArchive archive, TensorEntry e) {
        DType dt = e.dtype();
        if ((!dt.equals(DType.I64) && !dt.equals(DType.I32)) || e.shape().rank() != 1 || e.shape().dim(0) != 2) {
            throw MalformedFileException.inTensor(e.name(), "is " + dt + " " + e.shape() + "; a weight shape is I64 [2]");
        }
        long[] v = new long[2];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment b = archive.data(e, arena);
            if (b.byteSize() != e.byteSize()) {
                throw MalformedFileException.inTensor(e.name(), "holds " + b.byteSize() + " bytes, not " + e.byteSize());
            }
            for (int i = 0; i < 2; i++) {
                v[i] = dt.equals(DType.I64) ? b.get(LittleEndian.I64, 8L * i) : b.get(LittleEndian.I32, 4L * i);
            }
        }
        if (v[0] < 0 || v[1] < 0) {
            throw MalformedFileException.inTensor(e.name(), "says [" + v[0] + ", " + v[1] + "]: a negative dimension");
        }
        return v;
    }

    // ------------------------------------------------------------------ naive, int, float, mxfp8

    private static Recovery naive(String module, Map<String, TensorEntry> parts, CompressionFormat format, WeightArgs args,
                                  ParseLimits limits) {
        TensorEntry weight = require(parts, "weight", module);
        LayerData.CodeKind kind = switch (weight.dtype().name()) {
            case "I8" -> LayerData.CodeKind.INT8;
            case "F8_E4M3" -> LayerData.CodeKind.E4M3;
            case "F8_E5M2" -> LayerData.CodeKind.E5M2;
            default -> throw UnsupportedFeatureException.inTensor(weight.name(), format.spelling() + " weight in "
                    + weight.dtype() + " (I8, F8_E4M3 or F8_E5M2 are)");
        };
        requireRank(weight, 2);
        long rows = weight.shape().dim(0);
        long cols = weight.shape().dim(1);
        checkSize(weight, rows, cols, limits);
        TensorEntry scale = require(parts, "weight_scale", module);
        boolean mx = format == CompressionFormat.MXFP8_QUANTIZED;
        requireScaleDtype(scale, mx);
        ScaleGrid grid = grid(args, scale, rows, cols, mx ? Optional.of(32) : Optional.empty());
        Optional<TensorEntry> zero = Optional.ofNullable(parts.get("weight_zero_point"));
        zero.ifPresent(z -> checkZero(z, scale, false, scale.shape()));
        Optional<TensorEntry> gIdx = gIdx(parts, cols);
        String what = (kind == LayerData.CodeKind.INT8 ? "int8" : "FP8 " + weight.dtype().name().substring(3)) + ", "
                + describe(grid) + (gIdx.isPresent() ? ", act-order" : "") + (zero.isPresent() ? ", asymmetric" : "")
                + " (" + (mx ? "E8M0" : scale.dtype().name()) + " scales)";
        var kernel = new LayerKernel(weight, kind, 8, cols, (int) rows, (int) cols, grid, scale, mx, Optional.empty(),
                zero, false, gIdx);
        return recovery(module, rows, cols, format.spelling() + " " + what, kernel, weight, scale, zero, gIdx,
                Optional.empty(), Optional.empty());
    }

    // ------------------------------------------------------------------ nvfp4, mxfp4

    private static Recovery fp4(String module, Map<String, TensorEntry> parts, CompressionFormat format, WeightArgs args,
                                ParseLimits limits) {
        TensorEntry packed = require(parts, "weight_packed", module);
        if (!packed.dtype().equals(DType.U8)) {
            throw MalformedFileException.inTensor(packed.name(), "is " + packed.dtype() + "; FP4 pairs are stored as U8");
        }
        if (!args.isFloat() || args.numBits() != 4) {
            throw UnsupportedFeatureException.inTensor(packed.name(), format.spelling() + " with " + args.type()
                    + " " + args.numBits() + "-bit weights (FP4 is float, 4 bits)");
        }
        requireRank(packed, 2);
        long rows = packed.shape().dim(0);
        long cols = Math.multiplyExact(packed.shape().dim(1), 2);
        checkSize(packed, rows, cols, limits);
        boolean mx = format == CompressionFormat.MXFP4_PACK_QUANTIZED;
        TensorEntry scale = require(parts, "weight_scale", module);
        requireScaleDtype(scale, mx);
        if (parts.containsKey("weight_zero_point")) {
            throw UnsupportedFeatureException.inTensor(parts.get("weight_zero_point").name(), "FP4 weights with zero points");
        }
        if (parts.containsKey("weight_g_idx")) {
            throw UnsupportedFeatureException.inTensor(parts.get("weight_g_idx").name(), "FP4 weights with act-order g_idx");
        }
        ScaleGrid grid = grid(args, scale, rows, cols, Optional.of(mx ? 32 : 16));
        Optional<TensorEntry> global = Optional.ofNullable(parts.get("weight_global_scale"));
        if (global.isPresent()) {
            TensorEntry g = global.get();
            if (g.elementCount() != 1 || !isWide(g.dtype()) || g.dtype().equals(DType.F64)) {
                throw MalformedFileException.inTensor(g.name(), "is " + g.dtype() + " " + g.shape()
                        + "; a global scale is one F32, BF16 or F16 value");
            }
        }
        String what = "FP4 E2M1, " + describe(grid) + " (" + (mx ? "E8M0" : scale.dtype().name()) + " scales"
                + (global.isPresent() ? ", global scale" : "") + ")";
        var kernel = new LayerKernel(packed, LayerData.CodeKind.FP4, 4, packed.shape().dim(1), (int) rows, (int) cols, grid,
                scale, mx, global, Optional.empty(), false, Optional.empty());
        return recovery(module, rows, cols, format.spelling() + " " + what, kernel, packed, scale, Optional.empty(),
                Optional.empty(), Optional.empty(), global);
    }

    // ------------------------------------------------------------------ shared checks

    private static Recovery recovery(String module, long rows, long cols, String what, LayerKernel kernel, TensorEntry payload,
                                     TensorEntry scale, Optional<TensorEntry> zero, Optional<TensorEntry> gIdx,
                                     Optional<TensorEntry> shape, Optional<TensorEntry> global) {
        Map<String, Role> inputs = new LinkedHashMap<>();
        inputs.put(payload.name(), Role.QUANTIZED);
        inputs.put(scale.name(), Role.SCALE);
        global.ifPresent(e -> inputs.put(e.name(), GLOBAL_SCALE));
        zero.ifPresent(e -> inputs.put(e.name(), Role.ZERO_POINT));
        gIdx.ifPresent(e -> inputs.put(e.name(), Role.G_IDX));
        shape.ifPresent(e -> inputs.put(e.name(), SHAPE));
        return new Recovery(module + ".weight", Shape.of(rows, cols), SCHEME, "compressed-tensors " + what, inputs, kernel);
    }

    private static TensorEntry require(Map<String, TensorEntry> parts, String part, String module) {
        TensorEntry e = parts.get(part);
        if (e == null) {
            throw MalformedFileException.inTensor(primary(parts), "has no companion " + module + "." + part);
        }
        return e;
    }

    private static void requireRank(TensorEntry e, int rank) {
        if (e.shape().rank() != rank) {
            throw MalformedFileException.inTensor(e.name(), "has shape " + e.shape() + ", expected rank " + rank);
        }
    }

    /** Rows and columns the kernel indexes with ints; a row's tables and g_idx are per column. */
    private static void checkSize(TensorEntry payload, long rows, long cols, ParseLimits limits) {
        if (rows > Integer.MAX_VALUE || cols > Integer.MAX_VALUE / 16) {
            throw LimitExceededException.inTensor(payload.name(), "a " + rows + " x " + cols + " layer is larger than supported");
        }
        ParseLimits.check("columns of " + payload.name(), cols, limits.maxArrayLength());
    }

    private static void requireScaleDtype(TensorEntry scale, boolean exponents) {
        DType dt = scale.dtype();
        boolean ok = dt.equals(DType.F32) || dt.equals(DType.BF16) || dt.equals(DType.F16) || Float8.of(dt).isPresent()
                || (exponents && (dt.equals(DType.U8) || dt.equals(DType.F8_E8M0)));
        if (!ok) {
            throw UnsupportedFeatureException.inTensor(scale.name(), "scale in " + dt + " (F32, BF16, F16, FP8"
                    + (exponents ? " or E8M0 as U8" : "") + " are)");
        }
    }

    /**
     * The scale layout: the config's strategy (or, without one, what the scale's shape says,
     * as the library's {@code dequantize} infers it), checked against the scale's shape.
     */
    static ScaleGrid grid(WeightArgs args, TensorEntry scale, long rows, long cols, Optional<Integer> defaultGroup) {
        Shape s = scale.shape();
        String strategy = args.strategy().orElseGet(() -> s.elementCount() == 1 ? "tensor"
                : s.rank() == 2 && s.dim(1) == 1 ? "channel" : "group");
        ScaleGrid grid;
        String expected;
        switch (strategy) {
            case "tensor" -> {
                grid = ScaleGrid.perTensor(rows, cols);
                if (s.elementCount() == 1 && s.rank() <= 2) return grid;
                expected = "[] or [1] per tensor";
            }
            case "channel" -> {
                grid = ScaleGrid.perRow(rows, cols);
                expected = "[" + rows + ", 1] per channel";
            }
            case "group", "tensor_group" -> {
                Optional<Integer> gs = args.groupSize().or(() -> defaultGroup);
                long size;
                if (gs.isPresent()) {
                    size = gs.get();
                } else if (s.rank() == 2 && s.dim(1) > 0 && cols % s.dim(1) == 0) {
                    size = Math.max(1, cols / s.dim(1));
                } else {
                    throw MalformedFileException.inTensor(scale.name(), "group strategy without a group_size, and shape "
                            + s + " does not divide " + cols + " columns");
                }
                grid = ScaleGrid.groups(rows, cols, size);
                expected = "[" + rows + ", " + grid.scaleCols() + "] for groups of " + size;
            }
            case "block" -> {
                long[] b = args.blockStructure().orElseThrow(() -> MalformedFileException.inTensor(scale.name(),
                        "block strategy without block_structure"));
                grid = ScaleGrid.blocks(rows, cols, b[0], b[1]);
                expected = "[" + grid.scaleRows() + ", " + grid.scaleCols() + "] for " + b[0] + "x" + b[1] + " blocks";
            }
            default -> throw UnsupportedFeatureException.inTensor(scale.name(), "weight strategy '" + strategy
                    + "' (tensor, channel, group, tensor_group and block are supported)");
        }
        if (!s.equals(Shape.of(grid.scaleRows(), grid.scaleCols()))) {
            throw MalformedFileException.inTensor(scale.name(), "shape " + s + " does not fit the " + strategy
                    + " strategy of a [" + rows + ", " + cols + "] weight: expected " + expected);
        }
        return grid;
    }

    private static String describe(ScaleGrid grid) {
        if (grid.scaleCount() == 1 && grid.blockRows() >= grid.rows() && grid.blockCols() >= grid.cols()) return "per-tensor";
        if (grid.blockRows() == 1 && grid.blockCols() >= grid.cols()) return "per-channel";
        if (grid.blockRows() == 1) return "group " + grid.blockCols();
        return grid.blockRows() + "x" + grid.blockCols() + " blocks";
    }

    private static void checkZero(TensorEntry zero, TensorEntry scale, boolean packed, Shape packedShape) {
        Shape want = packed ? packedShape : scale.shape();
        if (!zero.shape().equals(want) && !(zero.elementCount() == 1 && scale.shape().elementCount() == 1)) {
            throw MalformedFileException.inTensor(zero.name(), "shape " + zero.shape() + " does not fit scales "
                    + scale.shape() + ": expected " + want + (packed ? " (packed along rows)" : ""));
        }
        DType dt = zero.dtype();
        boolean ok = packed ? dt.equals(DType.I32) || dt.equals(DType.U32)
                : dt.equals(DType.I8) || dt.equals(DType.U8) || dt.equals(DType.I16) || dt.equals(DType.I32)
                || dt.equals(DType.I64) || dt.equals(DType.F8_E4M3) || isWide(dt) && !dt.equals(DType.F64);
        if (!ok) throw MalformedFileException.inTensor(zero.name(), "zero points in " + dt);
    }

    private static Optional<TensorEntry> gIdx(Map<String, TensorEntry> parts, long cols) {
        TensorEntry g = parts.get("weight_g_idx");
        if (g == null) return Optional.empty();
        if ((!g.dtype().equals(DType.I32) && !g.dtype().equals(DType.I64)) || !g.shape().equals(Shape.of(cols))) {
            throw MalformedFileException.inTensor(g.name(), "is " + g.dtype() + " " + g.shape() + "; g_idx is I32 [" + cols + "]");
        }
        return Optional.of(g);
    }
}
