package io.anamnesis.format.gguf.hf;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Reading values out of a parsed {@code config.json} (the api's JSON reader gives numbers as Double). */
final class HfConfig {
    private HfConfig() {
    }

    /** {@code find_hparam}: the value of the first key present (a JSON null counts as present). */
    static Optional<Object> find(Map<?, ?> config, List<String> keys) {
        for (String k : keys) {
            if (config.containsKey(k)) return Optional.of(config.get(k));
        }
        return Optional.empty();
    }

    static Optional<Long> integer(Map<?, ?> config, String key) {
        return asInteger(config.get(key));
    }

    /** A JSON number that is a whole number (Python's {@code isinstance(v, int)} for what config files hold). */
    static Optional<Long> asInteger(Object v) {
        if (v instanceof Double d && d == Math.rint(d) && Math.abs(d) < 0x1p53) return Optional.of(d.longValue());
        if (v instanceof Long l) return Optional.of(l);
        return Optional.empty();
    }

    static Optional<Double> number(Object v) {
        return v instanceof Double d ? Optional.of(d) : v instanceof Long l ? Optional.of(l.doubleValue()) : Optional.empty();
    }
}
