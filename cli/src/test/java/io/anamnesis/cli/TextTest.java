package io.anamnesis.cli;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class TextTest {
    @Test
    void sizesUseBinaryUnitsWithOneDecimal() {
        assertThat(Text.size(0)).isEqualTo("0 B");
        assertThat(Text.size(1023)).isEqualTo("1023 B");
        assertThat(Text.size(1024)).isEqualTo("1.0 KiB");
        assertThat(Text.size(1536)).isEqualTo("1.5 KiB");
        assertThat(Text.size(3L << 30)).isEqualTo("3.0 GiB");
        assertThat(Text.sizeAndBytes(98304)).isEqualTo("96.0 KiB (98,304 bytes)");
    }

    @Test
    void countsAndDecimalsAreFormattedByHand() {
        assertThat(Text.count(0)).isEqualTo("0");
        assertThat(Text.count(999)).isEqualTo("999");
        assertThat(Text.count(1000)).isEqualTo("1,000");
        assertThat(Text.count(248864)).isEqualTo("248,864");
        assertThat(Text.count(-1234567)).isEqualTo("-1,234,567");
        assertThat(Text.decimals(1.25, 1)).isEqualTo("1.3");
        assertThat(Text.decimals(2.0, 2)).isEqualTo("2.00");
        assertThat(Text.decimals(1.05, 2)).isEqualTo("1.05");
        assertThat(Text.decimals(33.333, 0)).isEqualTo("33");
    }

    @Test
    void tableAlignsColumnsAndRightAlignsSizes() {
        Text.Table t = new Text.Table(new boolean[]{false, true, false}, "NAME", "SIZE", "ROLE");
        t.row("a.weight", "4 B", "quantized").row("b", "96.0 KiB", "scale");
        assertThat(t.lines("")).containsExactly(
                "NAME          SIZE  ROLE",
                "a.weight       4 B  quantized",
                "b         96.0 KiB  scale");
    }

    @Test
    void progressLineShowsPercentSizesRateAndEta() {
        assertThat(ProgressBar.line(50 << 20, 100 << 20, 1.0))
                .isEqualTo("[###############...............]  50%  50.0 MiB / 100.0 MiB  50.0 MiB/s  ETA 1s");
        assertThat(ProgressBar.line(100, 100, 2.0)).startsWith("[##############################] 100%");
        assertThat(ProgressBar.duration(125)).isEqualTo("2m05s");
        assertThat(ProgressBar.duration(3 * 3600 + 60)).isEqualTo("3h01m");
    }

    @Test
    void progressBarDrawsNothingWhenNotATerminal() throws Exception {
        var sw = new java.io.StringWriter();
        try (ProgressBar bar = new ProgressBar(new java.io.PrintWriter(sw), false)) {
            bar.started(100);
            bar.advanced(100);
        }
        assertThat(sw.toString()).isEmpty();
    }

    @Test
    void messagesAreFoldedToOneLine() {
        assertThat(Amn.oneLine("first\n  second\r\nthird ")).isEqualTo("first second third");
    }
}
