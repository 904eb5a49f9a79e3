package org.example.faulty;

import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.spi.FileProbe;
import io.anamnesis.api.spi.FormatReader;

import java.nio.file.Path;
import java.util.List;

/** A third party's reader (outside io.anamnesis) with a bug: in canRead, in open, or in what it says it is. */
public final class FaultyReader implements FormatReader {
    private final String fault;

    public FaultyReader(String fault) {
        this.fault = fault;
    }

    @Override
    public String format() {
        return fault.equals("format") ? null : "faulty";
    }

    @Override
    public List<String> fileExtensions() {
        if (fault.equals("extensions")) throw new IllegalStateException("extensions boom");
        return List.of("faulty");
    }

    @Override
    public String description() {
        return "a faulty reader";
    }

    @Override
    public boolean canRead(FileProbe probe) {
        if (fault.equals("canRead")) throw new IllegalStateException("canRead boom");
        return probe.startsWith("ABC".getBytes());
    }

    @Override
    public TensorArchive open(Path path, ParseLimits limits) {
        if (fault.equals("open")) throw new NullPointerException("open boom");
        return null;
    }
}
