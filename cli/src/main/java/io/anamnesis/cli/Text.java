package io.anamnesis.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

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
        return String.format(Locale.ROOT, "%.1f %s", v, UNITS[unit]);
    }

    /** {@code 1,234,567}. */
    static String count(long n) {
        return String.format(Locale.ROOT, "%,d", n);
    }

    /** {@code 96.0 KiB (98,304 bytes)}. */
    static String sizeAndBytes(long bytes) {
        return bytes < 1024 ? count(bytes) + " bytes" : size(bytes) + " (" + count(bytes) + " bytes)";
    }

    /** A value shortened to {@code max} characters on one line, for metadata previews. */
    static String preview(String value, int max) {
        String one = value.replaceAll("\\s*\\R\\s*", " ");
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
