package io.anamnesis.api.numeric;

/**
 * Where the scale of element {@code (r, c)} of a row-major {@code [rows, cols]} matrix sits
 * in a row-major {@code [scaleRows, scaleCols]} scale tensor, when each scale covers a
 * {@code blockRows x blockCols} tile (tiles at the right and bottom edges may be partial).
 * Every granularity quantizers use is one of these tilings: one scale for the tensor, one
 * per output row ("channel"), one per group of columns in a row, one per 2-D block.
 *
 * @param rows      the matrix's rows
 * @param cols      its columns
 * @param blockRows rows one scale covers, at least 1
 * @param blockCols columns one scale covers, at least 1
 */
public record ScaleGrid(long rows, long cols, long blockRows, long blockCols) {
    public ScaleGrid {
        if (rows < 0 || cols < 0) throw new IllegalArgumentException("matrix " + rows + " x " + cols);
        if (blockRows < 1 || blockCols < 1) throw new IllegalArgumentException("scale block " + blockRows + " x " + blockCols);
    }

    /** One scale for the whole matrix. */
    public static ScaleGrid perTensor(long rows, long cols) {
        return new ScaleGrid(rows, cols, Math.max(1, rows), Math.max(1, cols));
    }

    /** One scale per row (per output channel of an {@code nn.Linear} weight). */
    public static ScaleGrid perRow(long rows, long cols) {
        return new ScaleGrid(rows, cols, 1, Math.max(1, cols));
    }

    /** One scale per {@code groupSize} consecutive columns of each row. */
    public static ScaleGrid groups(long rows, long cols, long groupSize) {
        return new ScaleGrid(rows, cols, 1, groupSize);
    }

    /** One scale per {@code blockRows x blockCols} block. */
    public static ScaleGrid blocks(long rows, long cols, long blockRows, long blockCols) {
        return new ScaleGrid(rows, cols, blockRows, blockCols);
    }

    /** Rows of the scale tensor: {@code ceil(rows / blockRows)}. */
    public long scaleRows() {
        return ceilDiv(rows, blockRows);
    }

    /** Columns of the scale tensor: {@code ceil(cols / blockCols)}. */
    public long scaleCols() {
        return ceilDiv(cols, blockCols);
    }

    /** Scales in all: {@code scaleRows() * scaleCols()}. */
    public long scaleCount() {
        return Math.multiplyExact(scaleRows(), scaleCols());
    }

    /** The index, in the row-major scale tensor, of the scale of element {@code (r, c)}. */
    public long index(long r, long c) {
        return (r / blockRows) * scaleCols() + c / blockCols;
    }

    /** The scale column of matrix column {@code c}. */
    public long scaleColumn(long c) {
        return c / blockCols;
    }

    private static long ceilDiv(long a, long b) {
        return a / b + (a % b == 0 ? 0 : 1);
    }
}
