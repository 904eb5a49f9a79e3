package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Where amn looks for plugin jars, and what a jar that cannot be loaded does: a warning that
 * names it, and the installed providers. Loading a real plugin built outside the reactor is
 * test-release's (OutsidePluginTest).
 */
class PluginsTest {
    @TempDir
    Path dir;

    @Test
    void jarsComeFromTheImageFolderThenEachEntryOfAmnPlugins() throws Exception {
        Path image = Files.createDirectories(dir.resolve("image/plugins"));
        Files.writeString(image.resolve("b.jar"), "");
        Files.writeString(image.resolve("a.jar"), "");
        Files.writeString(image.resolve("notes.txt"), "");
        Path folder = Files.createDirectories(dir.resolve("more"));
        Files.writeString(folder.resolve("c.jar"), "");
        Path single = Files.writeString(dir.resolve("d.jar"), "");
        List<String> warnings = new ArrayList<>();
        String env = folder + File.pathSeparator + single + File.pathSeparator + dir.resolve("missing")
                + File.pathSeparator + File.pathSeparator + image.resolve("a.jar");
        List<Path> jars = Plugins.jars(Map.of(Plugins.ENV, env), Optional.of(image), warnings::add);
        assertThat(jars).extracting(p -> p.getFileName().toString()).containsExactly("a.jar", "b.jar", "c.jar", "d.jar");
        assertThat(warnings).singleElement().asString().contains("AMN_PLUGINS", "missing", "neither a jar nor a folder");
    }

    @Test
    void noPluginsMeansTheInstalledProvidersAsTheyAre() {
        List<String> warnings = new ArrayList<>();
        assertThat(Plugins.providers(Map.of(), Optional.empty(), warnings::add).get()).isSameAs(Anamnesis.installed());
        assertThat(warnings).isEmpty();
    }

    @Test
    void aJarThatIsNoJarIsAWarningNamingItAndAmnGoesOn() throws Exception {
        Path bad = Files.writeString(dir.resolve("broken-plugin.jar"), "not a zip");
        List<String> warnings = new ArrayList<>();
        Anamnesis amn = Plugins.load(List.of(bad), warnings::add);
        assertThat(amn).isSameAs(Anamnesis.installed());
        assertThat(warnings).singleElement().asString().startsWith("plugins not loaded (broken-plugin.jar): ");
    }
}
