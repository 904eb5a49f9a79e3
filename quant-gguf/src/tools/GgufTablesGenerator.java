import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Prints quant-gguf's {@code GgufTables.java} from ggml's {@code ggml-common.h}, whose lookup
 * tables (the i-quant grids, sign masks and non-linear codebooks) are facts of the format.
 * ggml's source is not kept in this repository; give the header's path:
 *
 * <pre>
 * git -C llama.cpp show ca01960e6a30e3d6a4cfeb1755d6e027b31f6b07:ggml/src/ggml-common.h &gt; ggml-common.h
 * java quant-gguf/src/tools/GgufTablesGenerator.java ggml-common.h ca01960e6a30e3d6a4cfeb1755d6e027b31f6b07 \
 *     &gt; quant-gguf/src/main/java/io/anamnesis/quant/gguf/GgufTables.java
 * </pre>
 *
 * The second argument, the llama.cpp commit the header comes from, is only written into the
 * class comment so a reader knows which ggml the tables are.
 *
 * Each table is read between {@code GGML_TABLE_BEGIN(type, name, size)} and
 * {@code GGML_TABLE_END()}, checked to hold exactly {@code size} values, and written as a
 * Java array under the constant name the kernels use. A table that is missing, or whose size
 * or element type changed upstream, stops the run rather than printing something else.
 */
public final class GgufTablesGenerator {
    /** A table to print: ggml's name and C type, and the Java constant it becomes. */
    record Table(String ggmlName, String cType, String javaName) {
    }

    static final List<Table> TABLES = List.of(
            new Table("kmask_iq2xs", "uint8_t", "KMASK_IQ2XS"),
            new Table("ksigns_iq2xs", "uint8_t", "KSIGNS_IQ2XS"),
            new Table("kvalues_iq4nl", "int8_t", "KVALUES_IQ4NL"),
            new Table("kvalues_mxfp4", "int8_t", "KVALUES_FP4"),
            new Table("iq2xxs_grid", "uint64_t", "IQ2XXS_GRID"),
            new Table("iq2xs_grid", "uint64_t", "IQ2XS_GRID"),
            new Table("iq2s_grid", "uint64_t", "IQ2S_GRID"),
            new Table("iq3xxs_grid", "uint32_t", "IQ3XXS_GRID"),
            new Table("iq3s_grid", "uint32_t", "IQ3S_GRID"),
            new Table("iq1s_grid", "uint64_t", "IQ1S_GRID"));

    static final int PER_LINE = 8;

    public static void main(String[] args) throws IOException {
        if (args.length != 2) {
            System.err.println("usage: java GgufTablesGenerator.java path/to/ggml-common.h LLAMA_CPP_COMMIT > GgufTables.java");
            System.exit(2);
        }
        String header = Files.readString(Path.of(args[0]), StandardCharsets.UTF_8);
        StringBuilder out = new StringBuilder();
        out.append("""
                package io.anamnesis.quant.gguf;

                /**
                 * The codebooks of ggml's i-quants and non-linear types, as ggml-common.h defines them
                 * (lookup tables are facts of the format). Generated from that header by
                 * quant-gguf/src/tools/GgufTablesGenerator.java (ggml at llama.cpp commit
                 * %s); do not edit by hand, run the generator.
                 * Grid entries are packed little-endian: byte j of an entry is element j of its group.
                 */
                final class GgufTables {
                    private GgufTables() {
                    }

                """.formatted(args[1]));
        for (Table t : TABLES) {
            List<String> values = values(header, t);
            boolean wide = t.cType().equals("uint64_t");
            out.append("    /** ggml ").append(t.ggmlName()).append(" (").append(t.cType()).append('[')
                    .append(values.size()).append("]). */\n");
            out.append("    static final ").append(wide ? "long" : "int").append("[] ").append(t.javaName()).append(" = {\n");
            for (int i = 0; i < values.size(); i += PER_LINE) {
                out.append("           ");
                for (String v : values.subList(i, Math.min(values.size(), i + PER_LINE))) {
                    out.append(' ').append(java(v, t.cType())).append(',');
                }
                out.append('\n');
            }
            out.append("    };\n\n");
        }
        out.append("}\n");
        System.out.print(out);
    }

    /** The values between the table's BEGIN and END, as written (decimal or hex). */
    static List<String> values(String header, Table t) {
        Matcher m = Pattern.compile("GGML_TABLE_BEGIN\\(\\s*(\\w+)\\s*,\\s*" + t.ggmlName() + "\\s*,\\s*(\\w+)\\s*\\)(.*?)GGML_TABLE_END\\(\\)",
                Pattern.DOTALL).matcher(header);
        if (!m.find()) throw new IllegalStateException("no table " + t.ggmlName() + " in the header");
        if (!m.group(1).equals(t.cType())) {
            throw new IllegalStateException(t.ggmlName() + " is " + m.group(1) + " upstream, expected " + t.cType());
        }
        int size = size(header, m.group(2));
        String body = m.group(3).replaceAll("//[^\n]*", "");
        List<String> values = new ArrayList<>();
        for (String v : body.split(",")) {
            if (!v.isBlank()) values.add(v.strip());
        }
        if (values.size() != size) {
            throw new IllegalStateException(t.ggmlName() + " holds " + values.size() + " values, declares " + size);
        }
        return values;
    }

    /** A table size: a number, or a {@code #define} of one ({@code NGRID_IQ1S}). */
    static int size(String header, String token) {
        if (token.matches("\\d+")) return Integer.parseInt(token);
        Matcher d = Pattern.compile("#define\\s+" + token + "\\s+(\\d+)").matcher(header);
        if (!d.find()) throw new IllegalStateException("no #define for table size " + token);
        return Integer.parseInt(d.group(1));
    }

    /** A C literal as the Java literal of the same bits: hex kept as hex, decimals range-checked. */
    static String java(String c, String cType) {
        boolean hex = c.startsWith("0x") || c.startsWith("0X");
        BigInteger v = hex ? new BigInteger(c.substring(2), 16) : new BigInteger(c);
        int bits = switch (cType) {
            case "uint8_t", "int8_t" -> 8;
            case "uint32_t" -> 32;
            default -> 64;
        };
        boolean signed = cType.equals("int8_t");
        BigInteger min = signed ? BigInteger.ONE.shiftLeft(bits - 1).negate() : BigInteger.ZERO;
        BigInteger max = signed ? BigInteger.ONE.shiftLeft(bits - 1).subtract(BigInteger.ONE)
                : BigInteger.ONE.shiftLeft(bits).subtract(BigInteger.ONE);
        if (v.compareTo(min) < 0 || v.compareTo(max) > 0) throw new IllegalStateException(c + " does not fit " + cType);
        if (!hex) return v.toString();
        String digits = c.substring(2).toLowerCase(java.util.Locale.ROOT);
        return "0x" + digits + (bits == 64 ? "L" : "");
    }
}
