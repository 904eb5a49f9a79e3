package io.anamnesis.cli;

import io.anamnesis.api.DType;
import picocli.CommandLine;

/** {@code --to bf16|f16|f32}: a wrong spelling is a usage error (exit 2), not a failure later. */
final class TargetConverter implements CommandLine.ITypeConverter<DType> {
    @Override
    public DType convert(String value) {
        try {
            return DType.recoveryTarget(value);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.TypeConversionException("'" + value + "' is not a recovery dtype (expected bf16, f16 or f32)");
        }
    }
}
