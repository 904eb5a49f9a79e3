package io.anamnesis.release;

import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.fail;

/**
 * What the build hands these tests (system properties set by this module's pom), and how they
 * run Maven and amn as a user would: a fresh local repository of their own, the staged
 * release as the only source of anamnesis artifacts, and the machine's own local repository
 * as a read-only mirror for everything else (plugins, JUnit), so that nothing is downloaded
 * and nothing is installed where other builds look.
 */
final class Release {
    private Release() {
    }

    static String version() {
        return property("release.version");
    }

    /** The source checkout (README.md, examples/, samples/). */
    static Path repository() {
        return Path.of(property("release.repository"));
    }

    /** The folder repository the build staged the release into; the test is skipped without one. */
    static Path staging() {
        Path staging = Path.of(property("release.staging"));
        Assumptions.assumeTrue(Files.isDirectory(staging.resolve("io/anamnesis/anamnesis-bom")),
                "the release was not staged (" + staging + "): ./build test stages it, as does mvn -Dstage verify;"
                        + " an offline build (-o) cannot, the deploy plugin refuses");
        return staging;
    }

    /** The release archive the cli module made; the test is skipped without one. */
    static Path archive() {
        Path archive = Path.of(property("release.archive"));
        Assumptions.assumeTrue(Files.isRegularFile(archive),
                "the release archive " + archive.getFileName() + " was not built (./build dist, or a build without -Damn.image.skip)");
        return archive;
    }

    private static String property(String name) {
        String v = System.getProperty(name);
        if (v == null || v.isBlank()) fail("system property " + name + " is not set: run these tests through Maven");
        return v;
    }

    record Run(int code, String output) {
    }

    /** Runs a command in {@code dir} with exactly {@code env}, output and errors together. */
    static Run run(Path dir, Map<String, String> env, List<String> command, int timeoutSeconds) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        pb.environment().clear();
        pb.environment().putAll(env);
        Path log = Files.createTempFile(dir, "run", ".log");
        pb.redirectOutput(log.toFile());
        Process p = pb.start();
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) { // a hang guard for the child
            p.destroyForcibly();
            fail(String.join(" ", command) + " did not finish in " + timeoutSeconds + " s:\n" + Files.readString(log));
        }
        return new Run(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
    }

    /**
     * Maven for a project outside the reactor: {@code mvn -s settings.xml}, where the settings
     * give a fresh local repository under {@code work}, the staged release as a repository,
     * and, for everything else, a mirror onto a view of this machine's local repository that
     * leaves out io/anamnesis (so an anamnesis artifact can only come from the staging).
     */
    static final class FreshMaven {
        final Path work;
        final Path localRepository;
        final Path settings;

        FreshMaven(Path work) throws IOException {
            this.work = work;
            this.localRepository = Files.createDirectories(work.resolve("repository"));
            Path view = Files.createDirectories(work.resolve("mirror"));
            Path shared = Path.of(property("release.maven.local"));
            try (Stream<Path> top = Files.list(shared)) {
                for (Path p : top.toList()) {
                    if (p.getFileName().toString().equals("io")) continue;
                    Files.createSymbolicLink(view.resolve(p.getFileName().toString()), p);
                }
            }
            Path io = Files.createDirectories(view.resolve("io"));
            if (Files.isDirectory(shared.resolve("io"))) {
                try (Stream<Path> groups = Files.list(shared.resolve("io"))) {
                    for (Path p : groups.toList()) {
                        if (p.getFileName().toString().equals("anamnesis")) continue;
                        Files.createSymbolicLink(io.resolve(p.getFileName().toString()), p);
                    }
                }
            }
            this.settings = Files.writeString(work.resolve("settings.xml"), """
                    <settings>
                      <localRepository>%s</localRepository>
                      <mirrors>
                        <mirror>
                          <id>this-machine</id>
                          <mirrorOf>*,!anamnesis-staging</mirrorOf>
                          <url>%s</url>
                        </mirror>
                      </mirrors>
                      <profiles>
                        <profile>
                          <id>anamnesis-staging</id>
                          <repositories>
                            <repository>
                              <id>anamnesis-staging</id>
                              <url>%s</url>
                              <releases><enabled>true</enabled></releases>
                              <snapshots><enabled>true</enabled></snapshots>
                            </repository>
                          </repositories>
                        </profile>
                      </profiles>
                      <activeProfiles><activeProfile>anamnesis-staging</activeProfile></activeProfiles>
                    </settings>
                    """.formatted(localRepository, view.toUri(), staging().toUri()));
        }

        Run mvn(Path project, String... args) throws Exception {
            Path mvn = Path.of(property("release.maven.home"), "bin", "mvn");
            List<String> command = new ArrayList<>(List.of(mvn.toString(), "-B", "-ntp", "-s", settings.toString()));
            command.addAll(List.of(args));
            Map<String, String> env = new java.util.HashMap<>();
            env.put("JAVA_HOME", System.getProperty("java.home"));
            env.put("PATH", System.getenv().getOrDefault("PATH", "/usr/bin:/bin"));
            env.put("HOME", work.toString());
            env.put("MAVEN_OPTS", "--sun-misc-unsafe-memory-access=allow -XX:+IgnoreUnrecognizedVMOptions -XX:TieredStopAtLevel=1");
            return run(project, env, command, 600);
        }
    }

    /** Unpacks the release archive into {@code dir} with tar, as a user would; returns the one folder in it. */
    static Path unpack(Path dir) throws Exception {
        Run r = run(dir, Map.of("PATH", System.getenv().getOrDefault("PATH", "/usr/bin:/bin")),
                List.of("tar", "-xzf", archive().toString()), 300);
        if (r.code() != 0) fail("tar failed: " + r.output());
        try (Stream<Path> top = Files.list(dir)) {
            List<Path> folders = top.filter(Files::isDirectory).toList();
            if (folders.size() != 1) fail("the archive should hold one folder, holds " + folders);
            return folders.getFirst();
        }
    }

    /**
     * A PATH holding only what the launcher script needs (bash, dirname, readlink): no java,
     * so the image's own runtime is all amn can use, as on a machine without Java.
     */
    static Path pathWithoutJava(Path dir) throws IOException {
        Path bin = Files.createDirectories(dir.resolve("path-without-java"));
        for (String tool : List.of("bash", "dirname", "readlink", "env")) {
            Path found = null;
            for (String d : List.of("/usr/bin", "/bin")) {
                Path p = Path.of(d, tool);
                if (Files.isExecutable(p)) {
                    found = p;
                    break;
                }
            }
            if (found == null) fail(tool + " not found in /usr/bin or /bin");
            Files.createSymbolicLink(bin.resolve(tool), found);
        }
        return bin;
    }

    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) return;
        try (Stream<Path> all = Files.walk(dir)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        }
    }
}
