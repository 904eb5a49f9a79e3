package io.anamnesis.format.gguf.hf;

import java.util.List;

/**
 * One GGUF hyper-parameter key taken from {@code config.json}: the first of {@code hfKeys}
 * that is present ({@code find_hparam}), written as {@code type}. {@code {arch}} in the key
 * is the architecture's GGUF name.
 *
 * @param key      the GGUF key, e.g. {@code {arch}.block_count}
 * @param type     how gguf-py writes it ({@code add_uint32}, {@code add_float32})
 * @param hfKeys   config.json keys, first present wins
 * @param required a missing one is an error (the converter's {@code find_hparam} without {@code optional})
 * @param unlessZero a zero is not written (the converter's {@code if x := self.hparams.get(...)})
 */
record HyperParameter(String key, Type type, List<String> hfKeys, boolean required, boolean unlessZero)
        implements Architecture.FamilyKey {
    enum Type { U32, F32 }

    static HyperParameter u32(String key, String... hfKeys) {
        return new HyperParameter(key, Type.U32, List.of(hfKeys), false, false);
    }

    static HyperParameter f32(String key, String... hfKeys) {
        return new HyperParameter(key, Type.F32, List.of(hfKeys), false, false);
    }

    HyperParameter asRequired() {
        return new HyperParameter(key, type, hfKeys, true, unlessZero);
    }

    HyperParameter skippedWhenZero() {
        return new HyperParameter(key, type, hfKeys, required, true);
    }

    String key(String arch) {
        return key.replace("{arch}", arch);
    }
}
