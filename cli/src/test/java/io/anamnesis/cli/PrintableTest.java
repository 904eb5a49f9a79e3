package io.anamnesis.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.anamnesis.api.Anamnesis;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static io.anamnesis.cli.Runs.amn;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A hostile file's names and metadata reach the terminal only with their control characters
 * escaped: no title change, screen clear or cursor move from {@code inspect} or an error.
 */
class PrintableTest {
    @TempDir
    Path dir;

    static final Anamnesis INSTALLED = Anamnesis.installed();

    @Test
    void escapesControlsAndBidiOverridesAndKeepsTextLineFeedsAndTabs() {
        assertThat(Printable.of("plain é 中 \t tab\nline")).isEqualTo("plain é 中 \t tab\nline");
        assertThat(Printable.of("a\u001b]0;title\u0007b")).isEqualTo("a\\u001b]0;title\\u0007b");
        assertThat(Printable.of("\r\u007f\u0085\u009b\u202e\u2066\u0000")).isEqualTo(
                "\\u000d\\u007f\\u0085\\u009b\\u202e\\u2066\\u0000");
        // U+00A0 and U+2028 are text, not controls a terminal acts on
        assertThat(Printable.of("\u00a0\u2028\u202f")).isEqualTo("\u00a0\u2028\u202f");
    }

    /** One F32 [1] tensor whose name holds the given characters (JSON-escaped in the header). */
    private Path fileNamed(String jsonName, String metadataValue) throws IOException {
        String json = "{\"__metadata__\":{\"note\":\"" + metadataValue + "\"},\"" + jsonName
                + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
        byte[] j = json.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + j.length + 4).order(ByteOrder.LITTLE_ENDIAN);
        return Files.write(dir.resolve("hostile.safetensors"), b.putLong(j.length).put(j).putFloat(1f).array());
    }

    @Test
    void parseAndInspectPrintEscapesNotControlSequences() throws IOException {
        Path f = fileNamed("w\\u001b[1A\\u001b[2K\\u0085", "\\u001b]0;PWNED\\u0007\\r\\u001b[2J");
        for (String command : new String[]{"parse", "inspect"}) {
            Runs.Run r = amn(INSTALLED, command, f.toString());
            assertThat(r.code()).as(r.err()).isZero();
            assertThat(r.out()).as(command).doesNotContain("\u001b", "\u0007", "\r", "\u0085");
            assertThat(r.err()).as(command).doesNotContain("\u001b");
        }
        assertThat(amn(INSTALLED, "parse", f.toString()).out()).contains("w\\u001b[1A\\u001b[2K\\u0085");
        // (inspect shows a value's line break as a space)
        assertThat(amn(INSTALLED, "inspect", f.toString()).out()).contains("\\u001b]0;PWNED\\u0007 \\u001b[2J");
    }

    /** The JSON outputs stay valid and keep the exact name: a C1 control becomes a JSON escape, which reads back as itself. */
    @Test
    void jsonOutputReadsBackAsTheExactName() throws IOException {
        Path f = fileNamed("w\\u001b\\u0085\\u202e", "x");
        Runs.Run r = amn(INSTALLED, "parse", f.toString(), "--json");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).doesNotContain("\u001b", "\u0085", "\u202e");
        var json = new ObjectMapper().readTree(r.out());
        assertThat(json.get("tensors").get(0).get("name").asText()).isEqualTo("w\u001b\u0085\u202e");
    }

    @Test
    void errorMessagesQuotingAFileEscapeItsControls() throws IOException {
        // a dtype the spec does not have: the error names the tensor
        String json = "{\"w\\u001b[2J\\u001b]0;x\\u0007\":{\"dtype\":\"Q9\",\"shape\":[1],\"data_offsets\":[0,4]}}";
        byte[] j = json.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + j.length + 4).order(ByteOrder.LITTLE_ENDIAN);
        Path f = Files.write(dir.resolve("bad.safetensors"), b.putLong(j.length).put(j).putFloat(1f).array());
        Runs.Run r = amn(INSTALLED, "inspect", f.toString());
        assertThat(r.code()).isNotZero().isNotEqualTo(1);
        assertThat(r.err()).contains("w\\u001b[2J").doesNotContain("\u001b", "\u0007");
    }
}
