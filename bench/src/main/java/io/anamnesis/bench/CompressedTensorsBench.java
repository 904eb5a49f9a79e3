package io.anamnesis.bench;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.E8M0;
import io.anamnesis.api.numeric.Float8;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.ScaleGrid;
import io.anamnesis.quant.compressed.tensors.CtKernels;
import io.anamnesis.quant.compressed.tensors.LayerData;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * compressed-tensors recovery of a [4096, 11008] layer (45.1 M elements) to BF16, single
 * thread, through {@link CtKernels#rows} as the dequantizer runs it, scalar and Vector API
 * lookups (scales widened once, the per-tensor tables made inside the measured call):
 * {@code int4} pack-quantized W4A16 group 128 (symmetric, and act-order {@code g_idx}),
 * {@code int8} W8A16 group 128, {@code nvfp4} (FP8 scales per 16, global scale) and
 * {@code mxfp4} (E8M0 scales per 32). Compare with {@link CopyBench} in the same run.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class CompressedTensorsBench {
    static final int ROWS = 4096;
    static final int COLS = 11008;

    @Param({"int4-g128", "int4-actorder", "int8-g128", "nvfp4", "mxfp4"})
    public String layout;

    private Arena arena;
    private LayerData data;
    private MemorySegment dest;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofConfined();
        SplittableRandom r = new SplittableRandom(42);
        dest = arena.allocate(2L * ROWS * COLS, 64);
        switch (layout) {
            case "int4-g128", "int4-actorder" -> {
                long rowBytes = COLS / 2;
                MemorySegment packed = random(r, rowBytes * ROWS);
                int groups = COLS / 128;
                int[] columnGroup = null;
                if (layout.equals("int4-actorder")) {
                    columnGroup = new int[COLS];
                    for (int c = 0; c < COLS; c++) columnGroup[c] = c / 128;
                    for (int c = COLS - 1; c > 0; c--) {
                        int j = r.nextInt(c + 1);
                        int t = columnGroup[c];
                        columnGroup[c] = columnGroup[j];
                        columnGroup[j] = t;
                    }
                }
                data = new LayerData(LayerData.CodeKind.OFFSET_PACKED, 4, packed, rowBytes, ROWS, COLS,
                        ScaleGrid.groups(ROWS, COLS, 128), bf16Scales(r, ROWS * groups), null, columnGroup, null, null);
            }
            case "int8-g128" -> {
                data = new LayerData(LayerData.CodeKind.OFFSET_PACKED, 8, random(r, (long) COLS * ROWS), COLS, ROWS, COLS,
                        ScaleGrid.groups(ROWS, COLS, 128), bf16Scales(r, ROWS * (COLS / 128)), null, null, null, null);
            }
            case "nvfp4", "mxfp4" -> {
                boolean nv = layout.equals("nvfp4");
                int gs = nv ? 16 : 32;
                int n = ROWS * (COLS / gs);
                byte[] codes = new byte[n];
                float[] ofCode = new float[256];
                float global = 2688f / 0.37f;
                for (int c = 0; c < 256; c++) ofCode[c] = nv ? Float8.E4M3FN.decode(c) / global : E8M0.decode(c);
                float[] scales = new float[n];
                for (int i = 0; i < n; i++) {
                    codes[i] = (byte) (nv ? 0x20 + r.nextInt(0x50) : 115 + r.nextInt(12));
                    scales[i] = ofCode[codes[i] & 0xFF];
                }
                data = new LayerData(LayerData.CodeKind.FP4, 4, random(r, (long) ROWS * COLS / 2), COLS / 2, ROWS, COLS,
                        ScaleGrid.groups(ROWS, COLS, gs), scales, null, null, codes, ofCode);
            }
            default -> throw new IllegalArgumentException(layout);
        }
    }

    private MemorySegment random(SplittableRandom r, long bytes) {
        MemorySegment s = arena.allocate(bytes, 64);
        for (long i = 0; i + 8 <= bytes; i += 8) s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        return s;
    }

    private static float[] bf16Scales(SplittableRandom r, int n) {
        float[] s = new float[n];
        for (int i = 0; i < n; i++) s[i] = Floats.bf16ToF32(Floats.f32ToBf16((float) r.nextDouble(1e-4, 0.02)));
        return s;
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public MemorySegment scalarToBf16() {
        CtKernels.rows(CtKernels.Impl.SCALAR, CtKernels.prepare(data, DType.BF16), 0, ROWS, dest);
        return dest;
    }

    @Benchmark
    public MemorySegment vectorToBf16() {
        CtKernels.rows(CtKernels.Impl.VECTOR, CtKernels.prepare(data, DType.BF16), 0, ROWS, dest);
        return dest;
    }
}
