package io.anamnesis.cli;

import io.anamnesis.api.LossMeter;
import io.anamnesis.api.spi.ForgetPlan;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code forget --report FILE.html}: what was lost, as one self-contained page for people
 * who would rather look than read. Inline CSS and SVG only: no script, no font, no request
 * to anywhere, so it opens the same offline, from a mail or an archive. Two plots (SNR of
 * every quantized tensor in file order; how many values had each size of error, by binary
 * order of magnitude) and the table of figures they come from. Points and bars carry
 * {@code <title>} elements, which browsers show on hover without any script.
 */
final class HtmlReport {
    private HtmlReport() {
    }

    private static final int WIDTH = 900;
    private static final int HEIGHT = 260;
    private static final int LEFT = 56;
    private static final int RIGHT = 16;
    private static final int TOP = 14;
    private static final int BOTTOM = 40;

    static String render(String input, String output, String target, ForgetPlan plan, LossMeter loss) {
        Map<String, LossMeter.Loss> perTensor = loss.perTensor();
        LossMeter.Loss total = loss.total();
        StringBuilder h = new StringBuilder(16_384);
        h.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>amn forget: ")
                .append(esc(input)).append(" to ").append(esc(target)).append("</title>\n<style>\n")
                .append("body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:940px;color:#222}\n")
                .append("h1{font-size:20px}h2{font-size:16px;margin-top:28px}\n")
                .append("table{border-collapse:collapse;font-size:12px;width:100%}\n")
                .append("td,th{border-bottom:1px solid #ddd;padding:3px 6px;text-align:right}\n")
                .append("td:first-child,th:first-child{text-align:left;word-break:break-all}\n")
                .append("svg{background:#fafafa;border:1px solid #ddd}.axis{stroke:#888}.grid{stroke:#e4e4e4}\n")
                .append("text{font:11px system-ui,sans-serif;fill:#444}.dot{fill:#1f6feb}.bar{fill:#d2691e}\n")
                .append(".kept{color:#888}\n</style></head><body>\n");
        h.append("<h1>").append(esc(input)).append(" &rarr; ").append(esc(output)).append(" (").append(esc(target))
                .append(")</h1>\n<p>").append(plan.encodedCount()).append(" of ").append(plan.decisions().size())
                .append(" tensors quantized. Over every quantized value: MAE ").append(sci(total.mae()))
                .append(", RMSE ").append(sci(total.rmse())).append(", max |error| ").append(sci(total.maxAbs()))
                .append(", SNR ").append(db(total.snrDb())).append(" over ").append(Text.count(total.count()))
                .append(" values").append(total.nonFinite() > 0 ? " (" + total.nonFinite() + " non-finite left out)" : "")
                .append(esc(Text.nonFiniteErrors(total, "decoded"))).append(".</p>\n");

        List<String> names = new ArrayList<>();
        List<LossMeter.Loss> losses = new ArrayList<>();
        for (ForgetPlan.Decision d : plan.decisions()) {
            LossMeter.Loss l = perTensor.get(d.tensor());
            if (d.encoded() && l != null) {
                names.add(d.tensor());
                losses.add(l);
            }
        }
        h.append("<h2>SNR by tensor, in file order</h2>\n").append(snrPlot(names, losses));
        LossMeter.Histogram hist = loss.histogram();
        h.append("<h2>How large the errors are</h2>\n");
        if (hist.total() == 0 && total.count() > 0) {
            h.append("<p>The quantizer of ").append(esc(target)).append(" reports its error per chunk, not value by value: ")
                    .append("no histogram.</p>\n");
        } else {
            h.append("<p>Values by |decoded &minus; original|, binary orders of magnitude; ").append(Text.count(hist.exact()))
                    .append(" values decoded exactly.</p>\n").append(histogram(hist));
        }

        h.append("<h2>Tensors</h2>\n<table><tr><th>tensor</th><th>becomes</th><th>MAE</th><th>RMSE</th><th>max |error|</th>")
                .append("<th>SNR dB</th></tr>\n");
        for (ForgetPlan.Decision d : plan.decisions()) {
            LossMeter.Loss l = perTensor.get(d.tensor());
            h.append(d.encoded() ? "<tr>" : "<tr class=\"kept\">").append("<td>").append(esc(d.tensor())).append("</td><td>")
                    .append(esc(d.becomes())).append(d.encoded() ? "" : " (" + esc(d.why()) + ")").append("</td>");
            if (l == null) h.append("<td></td><td></td><td></td><td></td>");
            else h.append("<td>").append(sci(l.mae())).append("</td><td>").append(sci(l.rmse())).append("</td><td>")
                    .append(sci(l.maxAbs())).append("</td><td>").append(db(l.snrDb())).append("</td>");
            h.append("</tr>\n");
        }
        h.append("</table>\n<p class=\"kept\">Written by amn forget. SNR = 10 log10(&Sigma;x&sup2; / &Sigma;e&sup2;) per tensor; ")
                .append("an exact tensor has infinite SNR, drawn at the top.</p>\n</body></html>\n");
        return h.toString();
    }

    /** Dots of SNR (dB) against tensor index; an infinite SNR sits on the top edge. */
    static String snrPlot(List<String> names, List<LossMeter.Loss> losses) {
        StringBuilder s = svgOpen();
        if (names.isEmpty()) return s.append(text(WIDTH / 2, HEIGHT / 2, "nothing was quantized", "middle")).append("</svg>\n").toString();
        double lo = Double.POSITIVE_INFINITY;
        double hi = Double.NEGATIVE_INFINITY;
        for (LossMeter.Loss l : losses) {
            double v = l.snrDb();
            if (Double.isFinite(v)) {
                lo = Math.min(lo, v);
                hi = Math.max(hi, v);
            }
        }
        if (!Double.isFinite(lo)) {
            lo = 0;
            hi = 100;
        }
        lo = Math.floor(lo / 5) * 5 - 5;
        hi = Math.ceil(hi / 5) * 5 + 5;
        double plotW = WIDTH - LEFT - RIGHT;
        double plotH = HEIGHT - TOP - BOTTOM;
        double step = niceStep((hi - lo) / 5);
        for (double y = Math.ceil(lo / step) * step; y <= hi + 1e-9; y += step) {
            double py = TOP + plotH * (1 - (y - lo) / (hi - lo));
            s.append(line(LEFT, py, WIDTH - RIGHT, py, "grid")).append(text(LEFT - 6, py + 4, fmt(y), "end"));
        }
        s.append(line(LEFT, TOP, LEFT, HEIGHT - BOTTOM, "axis")).append(line(LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, HEIGHT - BOTTOM, "axis"));
        s.append(text(14, TOP + plotH / 2, "SNR dB", "middle", "rotate(-90 14 " + fmt(TOP + plotH / 2) + ")"));
        s.append(text(LEFT + plotW / 2, HEIGHT - 8, "tensor (file order, 1.." + names.size() + ")", "middle"));
        int n = names.size();
        for (int i = 0; i < n; i++) {
            double v = losses.get(i).snrDb();
            double px = LEFT + (n == 1 ? plotW / 2 : plotW * i / (n - 1));
            // nothing lost (+inf) at the top; an infinite or NaN error (-inf, NaN) at the bottom
            double py = Double.isFinite(v) ? TOP + plotH * (1 - (v - lo) / (hi - lo)) : v > 0 ? TOP : TOP + plotH;
            s.append("<circle class=\"dot\" r=\"3\" cx=\"").append(fmt(px)).append("\" cy=\"").append(fmt(py)).append("\"><title>")
                    .append(i + 1).append(": ").append(esc(names.get(i))).append(" &#8212; ").append(db(v)).append(" dB</title></circle>\n");
        }
        return s.append("</svg>\n").toString();
    }

    /** Bars of value counts per binary order of magnitude of the error, only the occupied range. */
    static String histogram(LossMeter.Histogram hist) {
        long[] c = hist.counts();
        int first = -1;
        int last = -1;
        for (int i = 0; i < c.length; i++) {
            if (c[i] > 0) {
                if (first < 0) first = i;
                last = i;
            }
        }
        StringBuilder s = svgOpen();
        if (first < 0) return s.append(text(WIDTH / 2, HEIGHT / 2, "no error to show", "middle")).append("</svg>\n").toString();
        long max = 0;
        for (int i = first; i <= last; i++) max = Math.max(max, c[i]);
        int bins = last - first + 1;
        double plotW = WIDTH - LEFT - RIGHT;
        double plotH = HEIGHT - TOP - BOTTOM;
        double barW = plotW / bins;
        s.append(line(LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, HEIGHT - BOTTOM, "axis")).append(line(LEFT, TOP, LEFT, HEIGHT - BOTTOM, "axis"));
        s.append(text(LEFT - 6, TOP + 4, Text.count(max), "end")).append(text(LEFT - 6, HEIGHT - BOTTOM, "0", "end"));
        s.append(text(LEFT + plotW / 2, HEIGHT - 8, "|error| (binary orders of magnitude)", "middle"));
        int labelEvery = Math.max(1, bins / 12);
        for (int i = first; i <= last; i++) {
            double h = plotH * c[i] / max;
            double x = LEFT + barW * (i - first);
            int exp = LossMeter.Histogram.MIN_EXPONENT + i;
            String range = (i == 0 ? "< 2^" + (exp + 1) : i == c.length - 1 ? ">= 2^" + exp : "2^" + exp + " .. 2^" + (exp + 1));
            s.append("<rect class=\"bar\" x=\"").append(fmt(x + 1)).append("\" y=\"").append(fmt(HEIGHT - BOTTOM - h))
                    .append("\" width=\"").append(fmt(Math.max(1, barW - 2))).append("\" height=\"").append(fmt(h))
                    .append("\"><title>").append(esc(range)).append(": ").append(Text.count(c[i])).append(" values</title></rect>\n");
            if ((i - first) % labelEvery == 0) s.append(text(x + barW / 2, HEIGHT - BOTTOM + 14, "2^" + exp, "middle"));
        }
        return s.append("</svg>\n").toString();
    }

    private static StringBuilder svgOpen() {
        return new StringBuilder("<svg width=\"" + WIDTH + "\" height=\"" + HEIGHT
                + "\" viewBox=\"0 0 " + WIDTH + " " + HEIGHT + "\" role=\"img\">\n");
    }

    private static String line(double x1, double y1, double x2, double y2, String cls) {
        return "<line class=\"" + cls + "\" x1=\"" + fmt(x1) + "\" y1=\"" + fmt(y1) + "\" x2=\"" + fmt(x2) + "\" y2=\"" + fmt(y2) + "\"/>\n";
    }

    private static String text(double x, double y, String t, String anchor) {
        return text(x, y, t, anchor, null);
    }

    private static String text(double x, double y, String t, String anchor, String transform) {
        return "<text x=\"" + fmt(x) + "\" y=\"" + fmt(y) + "\" text-anchor=\"" + anchor + "\""
                + (transform == null ? "" : " transform=\"" + transform + "\"") + ">" + esc(t) + "</text>\n";
    }

    private static double niceStep(double raw) {
        double p = Math.pow(10, Math.floor(Math.log10(raw)));
        for (double m : new double[]{1, 2, 5, 10}) if (m * p >= raw) return m * p;
        return 10 * p;
    }

    private static String fmt(double v) {
        return String.format(Locale.ROOT, "%.1f", v + 0.0);
    }

    private static String sci(double v) {
        return String.format(Locale.ROOT, "%.4g", v);
    }

    private static String db(double v) {
        if (Double.isNaN(v)) return "NaN";
        if (Double.isInfinite(v)) return v > 0 ? "&#8734;" : "-&#8734;";
        return String.format(Locale.ROOT, "%.2f", v);
    }

    static String esc(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '&' -> b.append("&amp;");
                case '"' -> b.append("&quot;");
                case '\'' -> b.append("&#39;");
                default -> b.append(c);
            }
        }
        return b.toString();
    }
}
