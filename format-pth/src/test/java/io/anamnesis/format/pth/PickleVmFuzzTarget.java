package io.anamnesis.format.pth;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.ParseLimits;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.stream.Stream;

import static io.anamnesis.format.pth.TorchFiles.f32;
import static io.anamnesis.format.pth.TorchFiles.storages;

/**
 * The pickle VM alone, on fuzzed bytes: every opcode, memo, mark and nesting path, and the
 * GLOBAL allowlist. Whatever it reads ends in a value or one typed error; a pickle that
 * reaches for anything outside the allowlist must be a security error, never a call.
 */
class PickleVmFuzzTarget {
    static Stream<byte[]> seeds() {
        PickleWriter rebuild = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").global("torch._utils", "_rebuild_tensor_v2").mark()
                .mark().unicode("storage").global("torch", "FloatStorage").unicode("1").unicode("cpu").integer(4).none().tuple()
                .binPersId().integer(0).integer(2).integer(2).tuple2().integer(2).integer(1).tuple2()
                .newFalse().orderedDict().tuple().reduce().setItems().stop();
        PickleWriter values = PickleWriter.proto(2).emptyDict().mark().unicode("lr").binFloat(0.5)
                .unicode("n").integer(70000).setItems().stop();
        return Stream.of(rebuild.bytes(), values.bytes(), PickleWriter.proto(4).op('K').raw(255).stop().bytes(),
                TorchFiles.legacy(rebuild.bytes(), storages("1", f32(1, 2, 3, 4)), Map.of("1", 4)));
    }

    @MethodSource("seeds")
    @FuzzTest(maxDuration = "4s")
    void load(byte[] input) {
        Unpickler vm = new Unpickler(ParseLimits.defaults());
        MemorySegment in = MemorySegment.ofArray(input);
        try {
            // several pickles in a row, as the legacy format has them
            long pos = 0;
            for (int i = 0; i < 4 && pos < input.length; i++) {
                vm.load(in, pos, input.length);
                pos = vm.position();
            }
        } catch (AnamnesisException expected) {
            // typed
        }
    }
}
