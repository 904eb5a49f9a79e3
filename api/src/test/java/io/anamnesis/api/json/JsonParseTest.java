package io.anamnesis.api.json;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Json.parse's strings and numbers, against the JSON grammar and the JDK's Double.valueOf. */
class JsonParseTest {
    private static Object parse(String text) {
        return Json.parse(text, 8);
    }

    @Test
    void stringsWithAndWithoutEscapes() {
        assertThat(parse("\"plain text\"")).isEqualTo("plain text");
        assertThat(parse("\"\"")).isEqualTo("");
        assertThat(parse("\"Ġthe ĠÄ\"")).isEqualTo("Ġthe ĠÄ");
        assertThat(parse("\"a\\\"b\\\\c\\/d\\n\\t\\u00e9\\uD83D\\uDE00\"")).isEqualTo("a\"b\\c/d\n\té\uD83D\uDE00");
        // an escape after plain characters, and plain characters after it
        assertThat(parse("[\"abc\\ndef\", \"ghi\"]")).isEqualTo(List.of("abc\ndef", "ghi"));
        assertThat(parse("{\"k\\u0041\": \"v\"}")).isEqualTo(Map.of("kA", "v"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"\"unterminated", "\"tab\there\"", "\"line\nbreak\"", "\"bad \\q escape\"", "\"short \\u12\""})
    void badStringsAreRefused(String text) {
        assertThatThrownBy(() -> parse(text)).isInstanceOf(IllegalArgumentException.class);
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "-0", "7", "-42", "128256", "123456789012345", "-999999999999999", "1234567890123456",
            "9007199254740993", "1.5", "-0.0", "1e3", "1E-7", "2.5e+10", "0.1", "007", "+5"})
    void numbersAreWhatDoubleValueOfReads(String text) {
        Object v = parse(text);
        assertThat(v).isInstanceOf(Double.class);
        assertThat(Double.doubleToRawLongBits((Double) v)).as(text).isEqualTo(Double.doubleToRawLongBits(Double.valueOf(text)));
    }

    @Test
    void randomIntegersAreWhatDoubleValueOfReads() {
        SplittableRandom random = new SplittableRandom(26);
        for (int i = 0; i < 20_000; i++) {
            long v = random.nextLong() >> random.nextInt(64);
            String text = Long.toString(v);
            Object parsed = parse("[" + text + "]");
            assertThat(Double.doubleToRawLongBits((Double) ((List<?>) parsed).getFirst())).as(text)
                    .isEqualTo(Double.doubleToRawLongBits(Double.valueOf(text)));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"-", "1-2", "--1", "1e", ".", "-."})
    void badNumbersAreRefused(String text) {
        assertThatThrownBy(() -> parse(text)).isInstanceOf(IllegalArgumentException.class);
    }
}
