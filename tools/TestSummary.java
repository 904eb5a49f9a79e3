import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * The closing lines of {@code ./build test}: why tests were skipped (each reason once, with
 * its count), then one line {@code N passed, N failed, N skipped}, from the Surefire XML
 * reports under every module's {@code target/surefire-reports}. Run as a single-file
 * program: {@code java tools/TestSummary.java <repository> [<only reports newer than this file>]}.
 * Exits 1 when a report lists a failure or an error.
 */
public final class TestSummary {
    private TestSummary() {
    }

    public static void main(String[] args) throws Exception {
        Path root = Path.of(args.length > 0 ? args[0] : ".");
        long since = args.length > 1 && Files.exists(Path.of(args[1])) ? Files.getLastModifiedTime(Path.of(args[1])).toMillis() : 0;
        List<Path> reports;
        try (Stream<Path> s = Files.walk(root, 6)) {
            reports = s.filter(p -> p.getFileName().toString().startsWith("TEST-") && p.toString().endsWith(".xml"))
                    .filter(p -> p.toString().contains("surefire-reports"))
                    .filter(p -> modified(p) >= since)
                    .sorted().toList();
        }
        long passed = 0;
        long failed = 0;
        long skipped = 0;
        Map<String, Integer> skipReasons = new TreeMap<>();
        List<String> failures = new ArrayList<>();
        var factory = DocumentBuilderFactory.newInstance();
        factory.setExpandEntityReferences(false);
        for (Path report : reports) {
            Element suite = factory.newDocumentBuilder().parse(report.toFile()).getDocumentElement();
            NodeList cases = suite.getElementsByTagName("testcase");
            for (int i = 0; i < cases.getLength(); i++) {
                Element c = (Element) cases.item(i);
                Element skip = first(c, "skipped");
                Element failure = first(c, "failure");
                if (failure == null) failure = first(c, "error");
                if (failure != null) {
                    failed++;
                    failures.add(c.getAttribute("classname") + " > " + c.getAttribute("name"));
                } else if (skip != null) {
                    skipped++;
                    skipReasons.merge(reason(skip), 1, Integer::sum);
                } else {
                    passed++;
                }
            }
        }
        if (!skipReasons.isEmpty()) {
            System.out.println();
            System.out.println("Skipped, and why:");
            // one line per reason; corpus cases say "<family>/<case>: <reason>", counted by reason
            Map<String, Integer> byReason = new TreeMap<>();
            skipReasons.forEach((why, n) -> byReason.merge(why.replaceFirst("^[\\w.-]+/[\\w.-]+: ", ""), n, Integer::sum));
            byReason.forEach((why, n) -> System.out.println("  " + n + " x " + why));
        }
        if (!failures.isEmpty()) {
            System.out.println();
            System.out.println("Failed:");
            failures.forEach(f -> System.out.println("  " + f));
        }
        System.out.println();
        System.out.println(passed + " passed, " + failed + " failed, " + skipped + " skipped");
        if (failed > 0) System.exit(1);
    }

    private static long modified(Path p) {
        try {
            return Files.getLastModifiedTime(p).toMillis();
        } catch (IOException e) {
            return 0;
        }
    }

    /**
     * The skip's message: the attribute when the reporter set one, else the first line of the
     * element's text (an aborted test's exception), without the exception's class name.
     */
    private static String reason(Element skip) {
        String why = skip.getAttribute("message");
        if (why.isBlank()) why = skip.getTextContent().strip().lines().findFirst().orElse("");
        why = why.replaceFirst("^[\\w.$]+(Exception|Error): ", "").replaceFirst("^Assumption failed: ", "");
        return why.isBlank() ? "(no reason given: @Disabled, or an assumption without a message)" : oneLine(why);
    }

    private static Element first(Element parent, String tag) {
        NodeList l = parent.getElementsByTagName(tag);
        return l.getLength() == 0 ? null : (Element) l.item(0);
    }

    private static String oneLine(String s) {
        String one = s.strip().replaceAll("\\s+", " ");
        return one.length() > 300 ? one.substring(0, 297) + "..." : one;
    }
}
