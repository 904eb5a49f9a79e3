package io.anamnesis.quant.fp8;

/**
 * How an FP8 weight's scales cover it, as the scale tensor's shape says: one for the
 * tensor, one per output row, or one per {@code rows x cols} block (edge blocks partial).
 */
sealed interface ScaleLayout {
    /** Weight rows that share a scale row (for {@link Fp8Kernels#dequantizeGrid}). */
    long blockRows();

    /** Weight columns that share a scale, given the weight's column count. */
    long blockCols(long weightCols);

    /** "per-tensor scale", "per-channel scales", "128x128 block scales". */
    String describe();

    record PerTensor() implements ScaleLayout {
        @Override
        public long blockRows() {
            return Long.MAX_VALUE;
        }

        @Override
        public long blockCols(long weightCols) {
            return Long.MAX_VALUE;
        }

        @Override
        public String describe() {
            return "per-tensor scale";
        }
    }

    record PerChannel() implements ScaleLayout {
        @Override
        public long blockRows() {
            return 1;
        }

        @Override
        public long blockCols(long weightCols) {
            return Math.max(1, weightCols);
        }

        @Override
        public String describe() {
            return "per-channel scales";
        }
    }

    /** @param rows block height, @param cols block width; both positive */
    record Block(long rows, long cols) implements ScaleLayout {
        public Block {
            if (rows < 1 || cols < 1) throw new IllegalArgumentException("block size " + rows + "x" + cols);
        }

        @Override
        public long blockRows() {
            return rows;
        }

        @Override
        public long blockCols(long weightCols) {
            return cols;
        }

        @Override
        public String describe() {
            return rows + "x" + cols + " block scales";
        }
    }
}
