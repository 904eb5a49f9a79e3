package io.anamnesis.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;

/**
 * What amn prints from a file goes to a terminal, and a hostile file's tensor names and
 * metadata may hold control sequences: a title change, a screen clear, a cursor moved up to
 * overwrite a line of {@code inspect}. Text passes through here on its way out: every control
 * character but the line feed and the tab (C0, DEL, C1) and the bidirectional overrides that
 * reorder what is shown are written as {@code \}{@code uXXXX}, which reads plainly and is a
 * valid escape inside the JSON outputs too (Jackson escapes C0 there already, not C1).
 * amn's own colours never pass here: help is printed by picocli to the stream itself, error
 * prefixes and the progress bar go to standard error.
 */
final class Printable extends Writer {
    private final Writer out;

    private Printable(Writer out) {
        this.out = out;
    }

    /** {@code out} behind the filter, flushed at each line as amn's streams are. */
    static PrintWriter of(PrintWriter out) {
        return new PrintWriter(new Printable(out), true);
    }

    /** Whether {@code c} is written as an escape. */
    static boolean escaped(char c) {
        return c < 0x20 && c != '\n' && c != '\t' || c >= 0x7F && c <= 0x9F
                || c >= 0x202A && c <= 0x202E || c >= 0x2066 && c <= 0x2069;
    }

    /** {@code s} with every {@linkplain #escaped escaped} character as {@code \}{@code uXXXX}. */
    static String of(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (escaped(s.charAt(i))) {
                StringBuilder sb = new StringBuilder(s.length() + 16);
                for (int j = 0; j < s.length(); j++) append(sb, s.charAt(j));
                return sb.toString();
            }
        }
        return s;
    }

    private static void append(StringBuilder sb, char c) {
        if (escaped(c)) sb.append(String.format("\\u%04x", (int) c));
        else sb.append(c);
    }

    @Override
    public void write(char[] buf, int off, int len) throws IOException {
        int start = off;
        int end = off + len;
        for (int i = off; i < end; i++) {
            if (!escaped(buf[i])) continue;
            out.write(buf, start, i - start);
            out.write(String.format("\\u%04x", (int) buf[i]));
            start = i + 1;
        }
        out.write(buf, start, end - start);
    }

    @Override
    public void flush() throws IOException {
        out.flush();
    }

    @Override
    public void close() throws IOException {
        out.close();
    }
}
