package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.format.gguf.GgufType;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BiFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A family's packed experts ({@link Architecture.PackedExperts}, gpt-oss's and Llama 4's) as the
 * converter's {@code GptOssModel} and {@code Llama4Model} write them. Dense weights: gate and up
 * taken apart (the even and the odd columns of {@code gate_up_proj}, or its two halves), each
 * expert's matrix transposed to {@code [out, in]},
 * then typed as any weight of the output type; their biases split the same way, F32. MXFP4
 * weights ({@code _blocks} and {@code _scales}): the blocks' nibbles re-laid into ggml's MXFP4
 * order, each block's scale byte in front ({@link #ggmlBlocks}), values unchanged, written as
 * MXFP4 whatever the output type and before every other tensor, as
 * {@code generate_extra_tensors} writes them. Every tensor is checked against config.json
 * (experts, hidden size, width) as it is taken.
 */
final class PackedExpertTensors {
    private static final int BLOCK = 32, BLOCK_BYTES = 16;
    /** Output rows of a transposed expert made per pass over its source rows: bounds the scratch. */
    private static final int BAND = 64;
    /** Source rows (of a transposed expert) or MXFP4 blocks (of a row) handled per step: bounds the scratch whatever the shape. */
    private static final int PIECE = 4096;

    private final Architecture arch;
    private final Architecture.PackedExperts spec;
    private final TensorArchive source;
    private final long blockCount, count, hidden, width;
    private final Pattern name;
    /** The experts {@link #mxfp4} wrote as stored, by the name their recovery has. */
    private final java.util.Set<String> storedAsIs = new java.util.LinkedHashSet<>();

    PackedExpertTensors(Architecture arch, Architecture.PackedExperts spec, Map<?, ?> config, long blockCount, TensorArchive source) {
        this.arch = arch;
        this.spec = spec;
        this.source = source;
        this.blockCount = blockCount;
        this.count = positive(config, spec.count());
        this.hidden = positive(config, "hidden_size");
        this.width = positive(config, spec.width());
        this.name = Pattern.compile(Pattern.quote(spec.prefix()).replace("{bid}", "\\E(\\d{1,9})\\Q")
                + "(gate_up_proj|down_proj)(_bias|_blocks|_scales)?");
    }

    private static long positive(Map<?, ?> config, String key) {
        return HfConfig.integer(config, key).filter(v -> v > 0 && v <= Integer.MAX_VALUE)
                .orElseThrow(() -> HfGgufExporter.badKey(key, "is missing or not a positive integer"));
    }

    /**
     * The MXFP4 experts of the source, in {@code order} (the converter's tensor order): a
     * block's {@code down_proj} when its scales come, its gate and up when {@code gate_up_proj}'s
     * scales come, as {@code generate_extra_tensors} pairs them.
     */
    List<PlannedTensor> mxfp4(List<String> order) {
        List<PlannedTensor> out = new ArrayList<>();
        for (String n : order) {
            Matcher m = name.matcher(n);
            if (!m.matches() || !"_scales".equals(m.group(3))) continue;
            String base = n.substring(0, n.length() - "_scales".length());
            Optional<TensorEntry> blocks = source.tensor(base + "_blocks"), scales = source.tensor(n);
            if (blocks.isEmpty()) continue;
            boolean gateUp = m.group(2).equals("gate_up_proj");
            long rows = gateUp ? 2 * width : hidden, cols = gateUp ? hidden : width;
            String bid = m.group(1);
            check(blocks.get(), scales.get(), rows, cols);
            storedAsIs.add(base);
            if (gateUp) {
                out.add(mxfp4Rows(blocks.get(), scales.get(), mapped(bid, "gate_proj.weight"), 2, 0));
                out.add(mxfp4Rows(blocks.get(), scales.get(), mapped(bid, "up_proj.weight"), 2, 1));
            } else {
                out.add(mxfp4Rows(blocks.get(), scales.get(), mapped(bid, "down_proj.weight"), 1, 0));
            }
        }
        return out;
    }

    /** The tensors {@link #mxfp4} wrote from their MXFP4 blocks, under the names their recoveries have. */
    java.util.Set<String> storedAsIs() {
        return java.util.Collections.unmodifiableSet(storedAsIs);
    }

    /** Whether {@code d} is one of the packed experts' tensors recovered from MXFP4 blocks, which {@link #mxfp4} wrote. */
    private boolean fromBlocks(DenseTensor d) {
        return source.tensor(d.name() + "_blocks").isPresent() && source.tensor(d.name() + "_scales").isPresent();
    }

    /**
     * Takes {@code d} when it is one of the packed experts' tensors, adding what the converter
     * makes of it to {@code out} ({@code typed}: a tensor under its GGUF name in the type the
     * output type gives it); checks the router's rows against the expert count.
     */
    boolean take(DenseTensor d, List<PlannedTensor> out, BiFunction<DenseTensor, String, PlannedTensor> typed) {
        Matcher m = name.matcher(d.name());
        if (!m.matches()) {
            if (d.name().endsWith("." + spec.router()) && d.shape().rank() == 2 && d.shape().dim(0) != count) {
                throw HfGgufExporter.badKey(spec.count(), "is " + count + ", but the router " + d.name() + " has "
                        + d.shape().dim(0) + " rows (one per expert)");
            }
            return false;
        }
        String bid = m.group(1);
        if (Long.parseLong(bid) >= blockCount || (bid.length() > 1 && bid.charAt(0) == '0')) return false;
        if (m.group(3) != null && !m.group(3).equals("_bias")) {
            // blocks or scales without their pair, or without the MXFP4 recovery: nothing the converter could repack
            throw UnsupportedFeatureException.inTensor(d.name(), "is MXFP4 " + m.group(3).substring(1) + " without its "
                    + (m.group(3).equals("_blocks") ? "_scales" : "_blocks") + " (U8, the same experts and rows)");
        }
        if (fromBlocks(d)) return true;
        boolean gateUp = m.group(2).equals("gate_up_proj"), bias = m.group(3) != null;
        if (!d.isNumeric()) {
            throw UnsupportedFeatureException.inTensor(d.name(), "holds " + d.storedDType() + ", not floats; "
                    + "the converter writes float tensors only");
        }
        if (bias) {
            expect(d, gateUp ? new long[]{count, 2 * width} : new long[]{count, hidden});
            if (gateUp) {
                out.add(typed.apply(columns(d, mapped(bid, "gate_proj.bias"), 2, 0), mapped(bid, "gate_proj.bias")));
                out.add(typed.apply(columns(d, mapped(bid, "up_proj.bias"), 2, 1), mapped(bid, "up_proj.bias")));
            } else {
                out.add(typed.apply(d, mapped(bid, "down_proj.bias")));
            }
            return true;
        }
        expect(d, gateUp ? new long[]{count, hidden, 2 * width} : new long[]{count, width, hidden});
        if (gateUp && spec.halves()) {
            // Llama4Model.modify_tensors: gate_up_proj.transpose(-1, -2).split(width, dim=-2): gate the first half
            out.add(typed.apply(transposed(d, mapped(bid, "gate_proj.weight"), 1, 0, width), mapped(bid, "gate_proj.weight")));
            out.add(typed.apply(transposed(d, mapped(bid, "up_proj.weight"), 1, Math.toIntExact(width), width),
                    mapped(bid, "up_proj.weight")));
        } else if (gateUp) {
            out.add(typed.apply(transposed(d, mapped(bid, "gate_proj.weight"), 2, 0), mapped(bid, "gate_proj.weight")));
            out.add(typed.apply(transposed(d, mapped(bid, "up_proj.weight"), 2, 1), mapped(bid, "up_proj.weight")));
        } else {
            out.add(typed.apply(transposed(d, mapped(bid, "down_proj.weight"), 1, 0), mapped(bid, "down_proj.weight")));
        }
        return true;
    }

    /** The GGUF name of block {@code bid}'s {@code <prefix><what>}. */
    private String mapped(String bid, String what) {
        String hf = spec.prefix().replace("{bid}", bid) + what;
        return arch.map(hf, (int) blockCount).orElseThrow(() -> new IllegalStateException(hf + " is not in " + arch.gguf() + "'s table"));
    }

    private void expect(DenseTensor d, long[] dims) {
        if (d.shape().equals(Shape.of(dims))) return;
        throw MalformedFileException.inTensor(d.name(), "has shape " + d.shape() + ", but config.json " + spec.count() + " "
                + count + ", hidden_size " + hidden + " and " + spec.width() + " " + width + " make it " + Shape.of(dims));
    }

    private void check(TensorEntry blocks, TensorEntry scales, long rows, long cols) {
        if (cols % BLOCK != 0) {
            throw HfGgufExporter.badKey(rows == hidden ? spec.width() : "hidden_size", "is " + cols + ", not whole MXFP4 blocks of 32 ("
                    + blocks.name() + ")");
        }
        Shape b = Shape.of(count, rows, cols / BLOCK, BLOCK_BYTES), s = Shape.of(count, rows, cols / BLOCK);
        if (!blocks.dtype().equals(DType.U8) || !blocks.shape().equals(b)) {
            throw MalformedFileException.inTensor(blocks.name(), "is " + blocks.dtype() + " " + blocks.shape() + ", but config.json "
                    + "makes MXFP4 blocks U8 " + b);
        }
        if (!scales.dtype().equals(DType.U8) || !scales.shape().equals(s)) {
            throw MalformedFileException.inTensor(scales.name(), "is " + scales.dtype() + " " + scales.shape() + ", but config.json "
                    + "makes MXFP4 scales U8 " + s);
        }
    }

    /**
     * Rows {@code offset, offset + step, ...} of each expert of MXFP4 blocks {@code [E, R, G,
     * 16]} and scales {@code [E, R, G]} as ggml MXFP4 rows of {@code G} blocks (the tensor
     * {@code [E, R / step, 32 G]}): each block's scale byte, then its nibbles in ggml's order.
     */
    private PlannedTensor mxfp4Rows(TensorEntry blocks, TensorEntry scales, String gguf, int step, int offset) {
        long experts = blocks.shape().dim(0), rows = blocks.shape().dim(1), groups = blocks.shape().dim(2);
        long outRows = rows / step, rowElements = groups * BLOCK;
        int piece = (int) Math.min(groups, PIECE);
        DType mxfp4 = GgufType.MXFP4.dtype();
        return new PlannedTensor(gguf, mxfp4, Shape.of(experts, outRows, rowElements), rowElements, arena -> {
            MemorySegment b = source.data(blocks, arena), s = source.data(scales, arena);
            if (b.byteSize() != blocks.byteSize() || s.byteSize() != scales.byteSize()) {
                throw MalformedFileException.inTensor(blocks.name(), "holds fewer bytes than its shape needs");
            }
            byte[] hf = new byte[piece * BLOCK_BYTES], e = new byte[piece], part = new byte[piece * (BLOCK_BYTES + 1)];
            long rowBytes = groups * (BLOCK_BYTES + 1);
            return (first, n, dest) -> {
                long firstRow = first / rowElements;
                for (long k = 0; k < n / rowElements; k++) {
                    long r = firstRow + k, src = (r / outRows) * rows + offset + step * (r % outRows);
                    for (long g0 = 0; g0 < groups; g0 += piece) {
                        int m = (int) Math.min(piece, groups - g0);
                        MemorySegment.copy(b, ValueLayout.JAVA_BYTE, (src * groups + g0) * BLOCK_BYTES, hf, 0, m * BLOCK_BYTES);
                        MemorySegment.copy(s, ValueLayout.JAVA_BYTE, src * groups + g0, e, 0, m);
                        ggmlBlocks(hf, e, m, part);
                        MemorySegment.copy(part, 0, dest, ValueLayout.JAVA_BYTE, k * rowBytes + g0 * (BLOCK_BYTES + 1),
                                m * (BLOCK_BYTES + 1));
                    }
                }
            };
        });
    }

    /**
     * {@code groups} MXFP4 blocks as transformers stores them (16 bytes, value {@code 2j} in
     * byte {@code j}'s low nibble and {@code 2j + 1} in its high one, the E8M0 scale apart) as
     * ggml's {@code block_mxfp4} (the scale byte, then 16 bytes holding value {@code j} in
     * byte {@code j}'s low nibble and value {@code j + 16} in its high one): the same codes
     * and scale, so the same values.
     */
    static void ggmlBlocks(byte[] hf, byte[] scales, int groups, byte[] out) {
        for (int g = 0; g < groups; g++) {
            int in = g * BLOCK_BYTES, at = g * (BLOCK_BYTES + 1);
            out[at] = scales[g];
            for (int j = 0; j < BLOCK_BYTES; j++) {
                int shift = (j & 1) * 4;
                int low = (hf[in + (j >> 1)] >> shift) & 0xF, high = (hf[in + 8 + (j >> 1)] >> shift) & 0xF;
                out[at + 1 + j] = (byte) (low | high << 4);
            }
        }
    }

    /**
     * Columns {@code offset, offset + step, ...} of 3-D {@code d} {@code [E, A, B]}, each
     * expert's matrix transposed: element {@code (e, j, i)} of the result {@code [E, B / step, A]}
     * is {@code d (e, i, offset + step j)} ({@code d.transpose(-1, -2)[:, offset::step, :]}).
     * A 2-D {@code d} {@code [A, B]} is one such matrix, its result {@code [B / step, A]}.
     * A band of output rows reads its columns of every source row, so memory stays bounded.
     */
    static DenseTensor transposed(DenseTensor d, String gguf, int step, int offset) {
        return transposed(d, gguf, step, offset, d.shape().dim(d.shape().rank() - 1) / step);
    }

    /** {@link #transposed} of {@code outRows} columns only ({@code d.transpose(-1, -2)[:, offset : offset + step outRows : step, :]}). */
    static DenseTensor transposed(DenseTensor d, String gguf, int step, int offset, long outRows) {
        boolean matrix = d.shape().rank() == 2;
        long experts = matrix ? 1 : d.shape().dim(0), a = d.shape().dim(matrix ? 0 : 1), b = d.shape().dim(matrix ? 1 : 2);
        // source rows per step and output rows per band: the scratch stays under a few MB whatever the shape
        int rowsPerStep = (int) Math.max(1, Math.min(a, PIECE));
        int band = (int) Math.max(1, Math.min(BAND, (1L << 20) / ((long) rowsPerStep * step)));
        PlannedTensor values = new PlannedTensor(gguf, DType.F32, matrix ? Shape.of(outRows, a) : Shape.of(experts, outRows, a),
                Math.max(1, a), arena -> {
            io.anamnesis.api.spi.DenseReader reader = io.anamnesis.api.spi.DenseReader.open(d, arena);
            float[] columns = new float[rowsPerStep * ((band - 1) * step + 1)], piece = new float[rowsPerStep];
            return (first, n, dest) -> {
                long firstRow = first / a, total = n / a;
                for (long done = 0; done < total; ) {
                    long r = firstRow + done, e = r / outRows, j0 = r % outRows;
                    int rowsNow = (int) Math.min(band, Math.min(outRows - j0, total - done));
                    int span = (rowsNow - 1) * step + 1;
                    long c0 = offset + step * j0;
                    for (long i0 = 0; i0 < a; i0 += rowsPerStep) {
                        int m = (int) Math.min(rowsPerStep, a - i0);
                        for (int i = 0; i < m; i++) reader.read((e * a + i0 + i) * b + c0, span, columns, i * span);
                        for (int jj = 0; jj < rowsNow; jj++) {
                            for (int i = 0; i < m; i++) piece[i] = columns[i * span + jj * step];
                            MemorySegment.copy(piece, 0, dest, ValueLayout.JAVA_FLOAT_UNALIGNED, 4 * ((done + jj) * a + i0), m);
                        }
                    }
                    done += rowsNow;
                }
            };
        });
        return ConvertedTensor.dense(values);
    }

    /** Columns {@code offset, offset + step, ...} of the last dimension of 2-D {@code d} ({@code d[..., offset::step]}). */
    static DenseTensor columns(DenseTensor d, String gguf, int step, int offset) {
        long rows = d.shape().dim(0), cols = d.shape().dim(1), outCols = cols / step;
        int full = Math.toIntExact(cols), picked = Math.toIntExact(outCols);
        PlannedTensor values = new PlannedTensor(gguf, DType.F32, Shape.of(rows, outCols), Math.max(1, outCols), arena -> {
            io.anamnesis.api.spi.DenseReader reader = io.anamnesis.api.spi.DenseReader.open(d, arena);
            float[] in = new float[full], row = new float[picked];
            return (first, n, dest) -> {
                for (long k = 0; k < n / outCols; k++) {
                    reader.read((first / outCols + k) * cols, full, in, 0);
                    for (int j = 0; j < picked; j++) row[j] = in[offset + step * j];
                    MemorySegment.copy(row, 0, dest, ValueLayout.JAVA_FLOAT_UNALIGNED, 4 * k * outCols, picked);
                }
            };
        });
        return ConvertedTensor.dense(values);
    }
}
