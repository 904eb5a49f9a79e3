package io.anamnesis.release;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 15, item 1: the README's dependency snippet, as written, resolves from the staged
 * release in a fresh project (its own local repository; nothing from this machine's but
 * Maven's plugins), and the README's quick start compiles against it and runs on the
 * bundled sample.
 */
class FreshProjectTest {
    @TempDir
    Path dir;

    /** The first block of {@code language} after the README's library section heading. */
    static String readmeBlock(String language) throws Exception {
        String readme = Files.readString(Release.repository().resolve("README.md"));
        int section = readme.indexOf("## Library quick start");
        assertThat(section).as("README has a library quick start").isNotNegative();
        String fence = "```" + language + "\n";
        int start = readme.indexOf(fence, section);
        assertThat(start).as("a ```" + language + " block in the library section").isNotNegative();
        start += fence.length();
        return readme.substring(start, readme.indexOf("```", start));
    }

    @Test
    void theReadmeSnippetResolvesFromTheStagedReleaseAndTheQuickStartRuns() throws Exception {
        Path staging = Release.staging();
        String dependencies = readmeBlock("xml");
        assertThat(dependencies).contains("anamnesis-bom", "<scope>import</scope>", Release.version());
        Path project = Files.createDirectories(dir.resolve("fresh"));
        Files.writeString(project.resolve("pom.xml"), """
                <project xmlns="http://maven.apache.org/POM/4.0.0">
                  <modelVersion>4.0.0</modelVersion>
                  <groupId>com.example</groupId>
                  <artifactId>fresh</artifactId>
                  <version>1</version>
                  <properties>
                    <maven.compiler.release>25</maven.compiler.release>
                    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
                  </properties>
                %s
                  <build>
                    <pluginManagement>
                      <plugins>
                        <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.14.0</version></plugin>
                        <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
                      </plugins>
                    </pluginManagement>
                  </build>
                </project>
                """.formatted(dependencies));
        Path sources = Files.createDirectories(project.resolve("src/main/java"));
        Files.writeString(sources.resolve("QuickStart.java"), readmeBlock("java"));

        Release.FreshMaven maven = new Release.FreshMaven(dir.resolve("maven"));
        Release.Run build = maven.mvn(project, "-q", "compile",
                "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath", "-Dmdep.outputFile=classpath.txt");
        assertThat(build.code()).as(build.output()).isZero();

        // every anamnesis artifact came from the staging, byte for byte
        List<Path> resolved;
        try (Stream<Path> files = Files.walk(maven.localRepository.resolve("io/anamnesis"))) {
            resolved = files.filter(p -> p.toString().endsWith(".jar")).toList();
        }
        assertThat(resolved).extracting(p -> p.getFileName().toString())
                .anyMatch(n -> n.startsWith("anamnesis-api-")).anyMatch(n -> n.startsWith("anamnesis-format-safetensors-"));
        for (Path jar : resolved) {
            Path folder = jar.getParent();
            assertThat(Files.readString(folder.resolve("_remote.repositories"))).as(jar.toString()).contains(">anamnesis-staging=");
            Path staged = staging.resolve(maven.localRepository.relativize(folder)).resolve(jar.getFileName());
            if (Files.exists(staged)) assertThat(Files.mismatch(jar, staged)).as(jar.toString()).isEqualTo(-1);
        }

        String classPath = project.resolve("target/classes") + File.pathSeparator
                + Files.readString(project.resolve("classpath.txt")).strip();
        assertThat(Arrays.stream(classPath.split(File.pathSeparator)))
                .allMatch(e -> e.startsWith(project.toString()) || e.startsWith(maven.localRepository.toString()));
        Path out = dir.resolve("recovered.safetensors");
        Release.Run run = Release.run(project, Map.of("PATH", "/usr/bin:/bin"), List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp", classPath, "QuickStart",
                Release.repository().resolve("samples/tiny-fp8.safetensors").toString(), out.toString()), 300);
        assertThat(run.code()).as(run.output()).isZero();
        assertThat(run.output()).contains("model.layers.0.mlp.down_proj.weight F8_E4M3[256, 384]", "first value: ");
        assertThat(out).isRegularFile();
    }
}
