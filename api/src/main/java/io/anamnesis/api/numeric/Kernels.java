package io.anamnesis.api.numeric;

import java.util.Locale;

/**
 * The one switch for kernel choice, read here and nowhere else: the system property
 * {@value #PROPERTY} = {@code auto} (the default), {@code scalar} or {@code vector}.
 *
 * <ul>
 *   <li>{@code auto}: where the Vector API is resolved, workers start on the scalar kernels
 *       and switch to the vector ones once they have become the faster ({@link KernelRace});
 *   <li>{@code scalar}: the scalar kernels only; no vector kernel class is loaded;
 *   <li>{@code vector}: the vector kernels from the first call, no race (benchmarks), where
 *       the Vector API is resolved.
 * </ul>
 *
 * <p>The vector kernels need the incubating {@code jdk.incubator.vector} module in the boot
 * layer ({@code --add-modules jdk.incubator.vector}); without it every choice runs scalar.
 * Each module adds its own hardware check (vector width) to {@link #vectorAllowed()}. Both
 * paths give the same bytes: only speed depends on the choice. Any other value of the
 * property means {@code auto}.
 */
public final class Kernels {
    /** The system property that chooses. */
    public static final String PROPERTY = "anamnesis.kernels";

    /** Which kernels run. */
    public enum Choice { AUTO, SCALAR, VECTOR }

    private static final Choice CHOICE = parse(System.getProperty(PROPERTY));
    private static final boolean VECTOR_MODULE = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();

    private Kernels() {
    }

    /** The choice this JVM was started with. */
    public static Choice choice() {
        return CHOICE;
    }

    /**
     * Whether vector kernels may run at all: the Vector API module is resolved and the choice
     * is not {@code scalar}. A module that finds this false never touches its vector class.
     */
    public static boolean vectorAllowed() {
        return VECTOR_MODULE && CHOICE != Choice.SCALAR;
    }

    /** The choice a property value names: {@code scalar}, {@code vector}, else {@code auto}. */
    static Choice parse(String value) {
        if (value == null) return Choice.AUTO;
        return switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "scalar" -> Choice.SCALAR;
            case "vector" -> Choice.VECTOR;
            default -> Choice.AUTO;
        };
    }
}
