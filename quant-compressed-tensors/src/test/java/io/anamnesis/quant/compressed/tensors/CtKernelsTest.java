package io.anamnesis.quant.compressed.tensors;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.E8M0;
import io.anamnesis.api.numeric.Float8;
import io.anamnesis.api.numeric.ScaleGrid;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/** The vector lookups read the scalar path's tables: every layout and target gives the same bytes. */
class CtKernelsTest {
    static final DType[] TARGETS = {DType.F32, DType.BF16, DType.F16};

    @Test
    void vectorModuleIsResolvedInThisModulesTests() {
        // the pom adds --add-modules jdk.incubator.vector; without it the comparison below would test nothing
        assertThat(CtKernels.vectorAvailable()).isTrue();
    }

    /** A 4-bit layer of random codes: int4 with float scales (and zeros, act-order) or FP4 with 8-bit scale codes. */
    static LayerData layer(Arena arena, SplittableRandom r, int rows, int cols, int groupSize, boolean fp4,
                           boolean zeros, boolean actOrder, boolean e8m0) {
        long rowBytes = fp4 ? cols / 2 : ((long) cols * 4 + 31) / 32 * 4;
        MemorySegment codes = arena.allocate(rowBytes * rows);
        for (long i = 0; i < codes.byteSize(); i++) codes.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt(256));
        ScaleGrid grid = ScaleGrid.groups(rows, cols, groupSize);
        int n = (int) grid.scaleCount();
        float[] scales = new float[n];
        byte[] scaleCodes = null;
        float[] ofCode = null;
        if (fp4) {
            scaleCodes = new byte[n];
            ofCode = new float[256];
            for (int c = 0; c < 256; c++) ofCode[c] = e8m0 ? E8M0.decode(c) : Float8.E4M3FN.decode(c) / 1234.5f;
            for (int i = 0; i < n; i++) {
                scaleCodes[i] = (byte) r.nextInt(256);   // every code: NaN and infinite scales too
                scales[i] = ofCode[scaleCodes[i] & 0xFF];
            }
        } else {
            for (int i = 0; i < n; i++) scales[i] = (float) r.nextDouble(-0.1, 0.1);
            scales[0] = Float.NaN;
            if (n > 1) scales[1] = Float.POSITIVE_INFINITY;
        }
        float[] z = null;
        if (zeros) {
            z = new float[n];
            for (int i = 0; i < n; i++) z[i] = r.nextInt(16) - 8;
        }
        int[] columnGroup = null;
        if (actOrder) {
            columnGroup = new int[cols];
            for (int c = 0; c < cols; c++) columnGroup[c] = r.nextInt((int) grid.scaleCols());
        }
        return new LayerData(fp4 ? LayerData.CodeKind.FP4 : LayerData.CodeKind.OFFSET_PACKED, 4, codes, rowBytes, rows, cols,
                grid, scales, z, columnGroup, scaleCodes, ofCode);
    }

    @Test
    void vectorAndScalarLookupsAgreeOnEveryLayoutAndTarget() {
        SplittableRandom r = new SplittableRandom(17);
        // {cols, group}: tails after the last 32-code step, groups of 16 (two tables per step),
        // 48 (a group boundary inside a step's half), 128, 8 (not a multiple of 16: scalar only)
        int[][] shapes = {{256, 128}, {100, 16}, {144, 48}, {64, 32}, {40, 8}, {11008 / 8, 16}};
        try (Arena arena = Arena.ofConfined()) {
            for (int[] shape : shapes) {
                for (int variant = 0; variant < 6; variant++) {
                    boolean fp4 = variant >= 4;
                    if (fp4 && shape[0] % 2 != 0) continue;
                    LayerData d = layer(arena, r, 7, shape[0], shape[1], fp4, variant == 1, variant == 2, variant == 5);
                    for (DType t : TARGETS) {
                        CtKernels.Prepared p = CtKernels.prepare(d, t);
                        long bytes = 7L * shape[0] * CtKernels.width(t);
                        MemorySegment scalar = arena.allocate(bytes);
                        MemorySegment vector = arena.allocate(bytes);
                        CtKernels.rows(CtKernels.Impl.SCALAR, p, 0, 7, scalar);
                        CtKernels.rows(CtKernels.Impl.VECTOR, p, 0, 7, vector);
                        assertThat(vector.mismatch(scalar)).as("cols %d group %d variant %d %s", shape[0], shape[1], variant, t)
                                .isEqualTo(-1L);
                        // and a slice of rows gives the same bytes as those rows of the whole
                        MemorySegment part = arena.allocate(bytes / 7 * 3);
                        CtKernels.rows(CtKernels.Impl.VECTOR, p, 2, 3, part);
                        assertThat(part.mismatch(scalar.asSlice(bytes / 7 * 2, bytes / 7 * 3))).isEqualTo(-1L);
                    }
                }
            }
        }
    }
    /**
     * The 512-bit and 256-bit forms of the 16-bit lookup row (a JVM runs one of them) give the
     * same values from the same codes and tables, including a different table for each half of
     * a step and tables at the end of the padded array.
     */
    @Test
    void bothLookupRowFormsGiveTheSameValues() {
        SplittableRandom r = new SplittableRandom(23);
        int groups = 9;
        short[] table = new short[groups * 16 + 16];
        for (int i = 0; i < groups * 16; i++) table[i] = (short) r.nextInt(65536);
        int[] base = new int[groups];
        for (int g = 0; g < groups; g++) base[g] = 16 * (groups - 1 - g);   // not in order
        for (int cols : new int[] {32, 96, 1376, 1390}) {
            int[] halfGroup = new int[(cols + 15) / 16 + 1];
            for (int h = 0; h < halfGroup.length; h++) halfGroup[h] = h < 4 ? groups - 1 : r.nextInt(groups);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment codes = arena.allocate(cols / 2 + 16);
                for (long i = 0; i < codes.byteSize(); i++) codes.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt(256));
                MemorySegment wide = arena.allocate(2L * cols);
                MemorySegment narrow = arena.allocate(2L * cols);
                int doneWide = CtVectorKernels.row16Wide(codes, 8, cols, table, base, halfGroup, wide, 0);
                int doneNarrow = CtVectorKernels.row16Narrow(codes, 8, cols, table, base, halfGroup, narrow, 0);
                assertThat(doneWide).isEqualTo(doneNarrow).isEqualTo(cols / 32 * 32);
                // and both are the lookup spelled out: column c's code selects from its half's table
                for (int c = 0; c < doneWide; c++) {
                    int b = codes.get(ValueLayout.JAVA_BYTE, 8 + c / 2) & 0xFF;
                    int code = c % 2 == 0 ? b & 15 : b >>> 4;
                    short expected = table[base[halfGroup[c / 16]] + code];
                    assertThat(wide.get(ValueLayout.JAVA_SHORT_UNALIGNED, 2L * c)).as("column %d of %d", c, cols).isEqualTo(expected);
                }
                assertThat(wide.mismatch(narrow)).isEqualTo(-1L);
            }
        }
    }
}
