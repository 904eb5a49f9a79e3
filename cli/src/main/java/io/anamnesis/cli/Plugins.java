package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;

import java.io.File;
import java.io.IOException;
import java.lang.module.Configuration;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Plugin jars from outside the image: those in the image's {@code plugins} folder and those
 * {@code AMN_PLUGINS} names (jars, or folders of jars, separated by the path separator).
 * They are resolved as modules in a layer of their own over amn's, so a plugin sees the api
 * it was built against and whatever else the image holds, and the installed providers are
 * then looked up through that layer: a plugin jar that {@code provides} a reader, writer,
 * dequantizer or quantizer (in its module descriptor, or in {@code META-INF/services} for a
 * plain jar, which becomes an automatic module) is listed by {@code amn formats} and used by
 * every command.
 *
 * <p>No plugin: nothing is read beyond one check for the folder, and the providers are
 * {@link Anamnesis#installed()} as before. A plugin that cannot be resolved (a module it
 * requires is missing, two jars hold the same package) is a warning naming it, and amn goes
 * on with what it has: the command then says, as always, which module a file needs.
 */
final class Plugins {
    private Plugins() {
    }

    /** The environment variable that names plugin jars and folders. */
    static final String ENV = "AMN_PLUGINS";

    /** {@code plugins} beside {@code bin} and {@code lib} of the running runtime image, when it has one. */
    static Optional<Path> imageFolder() {
        String home = System.getProperty("java.home");
        if (home == null) return Optional.empty();
        Path folder = Path.of(home, "plugins");
        return Files.isDirectory(folder) ? Optional.of(folder) : Optional.empty();
    }

    /**
     * The providers amn runs with, made on first use: the installed ones, plus those of the
     * plugin jars found through {@code env} and {@code imageFolder}.
     */
    static Supplier<Anamnesis> providers(Map<String, String> env, Optional<Path> imageFolder, Consumer<String> warn) {
        return new Supplier<>() {
            private Anamnesis loaded;

            @Override
            public synchronized Anamnesis get() {
                if (loaded == null) loaded = load(jars(env, imageFolder, warn), warn);
                return loaded;
            }
        };
    }

    /** The plugin jars, in a stable order: the image's folder first, then AMN_PLUGINS as written. */
    static List<Path> jars(Map<String, String> env, Optional<Path> imageFolder, Consumer<String> warn) {
        List<Path> jars = new ArrayList<>();
        imageFolder.ifPresent(folder -> jars.addAll(jarsIn(folder, warn)));
        String configured = env.get(ENV);
        if (configured != null) {
            for (String entry : configured.split(File.pathSeparator)) {
                if (entry.isBlank()) continue;
                Path p = Path.of(entry);
                if (Files.isDirectory(p)) jars.addAll(jarsIn(p, warn));
                else if (Files.isRegularFile(p) && p.getFileName().toString().endsWith(".jar")) jars.add(p);
                else warn.accept(ENV + " names " + entry + ", which is neither a jar nor a folder; left out");
            }
        }
        return jars.stream().map(p -> p.toAbsolutePath().normalize()).distinct().toList();
    }

    private static List<Path> jarsIn(Path folder, Consumer<String> warn) {
        try (Stream<Path> files = Files.list(folder)) {
            return files.filter(p -> p.getFileName().toString().endsWith(".jar") && Files.isRegularFile(p)).sorted().toList();
        } catch (IOException e) {
            warn.accept("cannot list the plugin folder " + folder + ": " + e.getMessage());
            return List.of();
        }
    }

    /** The installed providers, with those of {@code jars} resolved in a layer of their own. */
    static Anamnesis load(List<Path> jars, Consumer<String> warn) {
        if (jars.isEmpty()) return Anamnesis.installed();
        try {
            ModuleFinder finder = ModuleFinder.of(jars.toArray(Path[]::new));
            Set<String> roots = finder.findAll().stream().map(r -> r.descriptor().name()).collect(Collectors.toSet());
            ModuleLayer parent = ModuleLayer.boot();
            Configuration config = parent.configuration().resolveAndBind(finder, ModuleFinder.of(), roots);
            ModuleLayer layer = parent.defineModulesWithOneLoader(config, ClassLoader.getSystemClassLoader());
            ModuleReference any = finder.findAll().iterator().next();
            int known = Anamnesis.notLoaded().size();
            Anamnesis loaded = Anamnesis.loadFrom(layer.findLoader(any.descriptor().name()));
            // a plugin's provider that cannot be made (its constructor threw) or used (it cannot say
            // what it is) is left out: say so, naming it, and go on with the others
            for (String left : Anamnesis.notLoaded().subList(known, Anamnesis.notLoaded().size())) {
                warn.accept("plugin provider left out: " + Amn.oneLine(left));
            }
            return loaded;
        } catch (RuntimeException e) {
            // FindException, ResolutionException, LayerInstantiationException, a bad jar
            warn.accept("plugins not loaded (" + jars.stream().map(p -> p.getFileName().toString())
                    .collect(Collectors.joining(", ")) + "): " + Amn.oneLine(e.getMessage()));
            return Anamnesis.installed();
        }
    }
}
