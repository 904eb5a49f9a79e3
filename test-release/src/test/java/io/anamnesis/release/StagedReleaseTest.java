package io.anamnesis.release;

import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

import javax.xml.parsers.DocumentBuilderFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.ZipFile;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 15, item 1: what the build staged is what a repository requires. The parent and the
 * BOM carry name, description, URL, licence, SCM and developers (every module inherits them
 * from the parent); each published module has its POM, jar, sources jar and javadoc jar; the
 * BOM names every published module (the reactor's modules but the BOM and the test and
 * benchmark modules) at this version, and the release archive is staged with the cli.
 */
class StagedReleaseTest {
    static final List<String> NOT_PUBLISHED = List.of("bom", "test-corpus", "test-release", "bench");

    static Document xml(Path file) throws Exception {
        var factory = DocumentBuilderFactory.newInstance();
        factory.setNamespaceAware(false);
        return factory.newDocumentBuilder().parse(file.toFile());
    }

    static String text(Element parent, String child) {
        NodeList nodes = parent.getElementsByTagName(child);
        return nodes.getLength() == 0 ? "" : nodes.item(0).getTextContent().strip();
    }

    /** The one staged file of an artifact whose name ends in {@code suffix} (timestamped snapshot or release). */
    static Path staged(Path staging, String artifact, String suffix) throws Exception {
        Path folder = staging.resolve("io/anamnesis/" + artifact + "/" + Release.version());
        assertThat(folder).as(artifact + " is staged").isDirectory();
        String base = Release.version().replace("-SNAPSHOT", "");
        Pattern name = Pattern.compile(Pattern.quote(artifact + "-" + base) + "(-SNAPSHOT|-\\d{8}\\.\\d{6}-\\d+)?"
                + Pattern.quote(suffix));
        try (Stream<Path> files = Files.list(folder)) {
            List<Path> found = files.filter(p -> name.matcher(p.getFileName().toString()).matches()).sorted().toList();
            assertThat(found).as(artifact + suffix).isNotEmpty();
            return found.getLast();
        }
    }

    @Test
    void everyPublishedArtifactIsStagedWithWhatARepositoryRequires() throws Exception {
        Path staging = Release.staging();
        Path repo = Release.repository();

        List<String> modules = new ArrayList<>();
        Matcher m = Pattern.compile("<module>([^<]+)</module>").matcher(Files.readString(repo.resolve("pom.xml")));
        while (m.find()) if (!NOT_PUBLISHED.contains(m.group(1))) modules.add("anamnesis-" + m.group(1));
        assertThat(modules).contains("anamnesis-api", "anamnesis-cli", "anamnesis-format-safetensors", "anamnesis-quant-fp8");

        for (String artifact : List.of("anamnesis-parent", "anamnesis-bom")) {
            Element pom = xml(staged(staging, artifact, ".pom")).getDocumentElement();
            assertThat(text(pom, "version")).isEqualTo(Release.version());
            assertThat(text(pom, "name")).as(artifact).isNotEmpty();
            assertThat(text(pom, "description")).as(artifact).isNotEmpty();
            assertThat(text(pom, "url")).as(artifact).startsWith("https://");
            Element licence = (Element) pom.getElementsByTagName("license").item(0);
            assertThat(text(licence, "name")).isEqualTo("Apache-2.0");
            assertThat(text(licence, "url")).startsWith("https://");
            Element scm = (Element) pom.getElementsByTagName("scm").item(0);
            assertThat(text(scm, "connection")).startsWith("scm:git:");
            assertThat(text(scm, "url")).startsWith("https://");
            Element developer = (Element) pom.getElementsByTagName("developer").item(0);
            assertThat(text(developer, "name")).isNotEmpty();
        }

        Element bom = xml(staged(staging, "anamnesis-bom", ".pom")).getDocumentElement();
        assertThat(bom.getElementsByTagName("parent").getLength()).as("an imported BOM brings no parent's pins").isZero();
        TreeSet<String> managed = new TreeSet<>();
        NodeList deps = bom.getElementsByTagName("dependency");
        for (int i = 0; i < deps.getLength(); i++) {
            Element d = (Element) deps.item(i);
            assertThat(text(d, "groupId")).isEqualTo("io.anamnesis");
            // the BOM's own version, written as such, which an import resolves as the BOM's
            assertThat(text(d, "version")).isIn(Release.version(), "${project.version}");
            managed.add(text(d, "artifactId"));
        }
        assertThat(managed).isEqualTo(new TreeSet<>(modules));

        for (String artifact : modules) {
            Element pom = xml(staged(staging, artifact, ".pom")).getDocumentElement();
            assertThat(text(pom, "name")).as(artifact).isNotEmpty();
            assertThat(text(pom, "description")).as(artifact).isNotEmpty();
            assertThat(text((Element) pom.getElementsByTagName("parent").item(0), "artifactId")).isEqualTo("anamnesis-parent");
            try (ZipFile jar = new ZipFile(staged(staging, artifact, ".jar").toFile())) {
                assertThat(jar.getEntry("module-info.class")).as(artifact + " is a named module").isNotNull();
            }
            try (ZipFile sources = new ZipFile(staged(staging, artifact, "-sources.jar").toFile())) {
                assertThat(sources.getEntry("module-info.java")).as(artifact + " sources").isNotNull();
            }
            try (ZipFile javadoc = new ZipFile(staged(staging, artifact, "-javadoc.jar").toFile())) {
                assertThat(javadoc.getEntry("index.html")).as(artifact + " javadoc").isNotNull();
            }
        }
        Path archive = staged(staging, "anamnesis-cli", "-" + Release.archive().getFileName().toString()
                .replace("amn-" + Release.version() + "-", ""));
        assertThat(Files.mismatch(archive, Release.archive())).isEqualTo(-1);
    }
}
