package io.anamnesis.cli;

import java.util.ArrayList;
import java.util.List;

/** Human-readable sizes and aligned text tables for the terminal. */
final class Text {
    private Text() {
    }

    private static final String[] UNITS = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

    /** {@code 512 B}, {@code 96.0 KiB}, {@code 13.5 GiB}: binary units, one decimal. */
    static String size(long bytes) {
        if (bytes < 1024) return bytes + " B";
        double v = bytes;
        int unit = -1;
        while (v >= 1024 && unit < UNITS.length - 1) {
            v /= 1024;
            unit++;
        }
        return decimals(v, 1) + " " + UNITS[unit];
    }

    /**
     * {@code 1,234,567}. By hand, as is {@link #decimals}: the first {@code String.format}
     * with a grouping flag initializes the locale providers, ~20 ms of a 100 ms start-up.
     */
    static String count(long n) {
        String digits = Long.toString(Math.abs(n));
        StringBuilder sb = new StringBuilder(n < 0 ? "-" : "");
        for (int i = 0; i < digits.length(); i++) {
            if (i > 0 && (digits.length() - i) % 3 == 0) sb.append(',');
            sb.append(digits.charAt(i));
        }
        return sb.toString();
    }

    /** A non-negative value with {@code places} decimals, rounded half up like {@code %.Nf}. */
    static String decimals(double value, int places) {
        long scale = places == 0 ? 1 : places == 1 ? 10 : places == 2 ? 100 : 1000;
        long scaled = Math.round(value * scale);
        if (places == 0) return Long.toString(scaled);
        String frac = Long.toString(scaled % scale);
        return (scaled / scale) + "." + "0".repeat(places - frac.length()) + frac;
    }

    /**
     * A signal-to-noise ratio in dB: two decimals; {@code inf} when nothing was lost,
     * {@code -inf} when an error was infinite, {@code nan} when one was NaN (a value that
     * decodes to inf or NaN where the original was finite).
     */
    static String db(double snr) {
        if (Double.isNaN(snr)) return "nan";
        if (Double.isInfinite(snr)) return snr > 0 ? "inf" : "-inf";
        return decimals(snr, 2);
    }

    /**
     * What to add to a loss line whose errors are not all finite: the sums then hold an
     * infinity or a NaN, which happens when a value decodes to inf or NaN where its original was
     * finite (an encoder's scale that overflowed its f16, as in ggml); otherwise nothing.
     */
    static String nonFiniteErrors(io.anamnesis.api.LossMeter.Loss l, String where) {
        return Double.isFinite(l.sumAbs()) && Double.isFinite(l.sumSq()) ? ""
                : "; some values " + where + " are inf or NaN where the original is finite";
    }

    /** {@code 96.0 KiB (98,304 bytes)}. */
    static String sizeAndBytes(long bytes) {
        return bytes < 1024 ? count(bytes) + " bytes" : size(bytes) + " (" + count(bytes) + " bytes)";
    }

    /** A value shortened to {@code max} characters on one line, for metadata previews. */
    static String preview(String value, int max) {
        String one = Amn.oneLine(value);
        return one.length() <= max ? one : one.substring(0, Math.max(0, max - 1)) + "…";
    }

    /** Columns padded to their widest cell; the last column is not padded. */
    static final class Table {
        private final List<String[]> rows = new ArrayList<>();
        private final boolean[] rightAligned;

        Table(boolean[] rightAligned, String... header) {
            this.rightAligned = rightAligned;
            rows.add(header);
        }

        Table row(String... cells) {
            rows.add(cells);
            return this;
        }

        List<String> lines(String indent) {
            int columns = rows.getFirst().length;
            int[] width = new int[columns];
            for (String[] r : rows) {
                for (int c = 0; c < columns; c++) width[c] = Math.max(width[c], r[c].length());
            }
            List<String> out = new ArrayList<>();
            for (String[] r : rows) {
                StringBuilder sb = new StringBuilder(indent);
                for (int c = 0; c < columns; c++) {
                    if (c > 0) sb.append("  ");
                    boolean last = c == columns - 1;
                    String cell = r[c];
                    if (rightAligned[c]) {
                        sb.append(" ".repeat(width[c] - cell.length())).append(cell);
                    } else {
                        sb.append(cell);
                        if (!last) sb.append(" ".repeat(width[c] - cell.length()));
                    }
                }
                out.add(sb.toString().stripTrailing());
            }
            return out;
        }
    }
}
