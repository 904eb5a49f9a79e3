package io.anamnesis.format.pth;

import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;

import static io.anamnesis.format.pth.TorchFiles.f32;
import static io.anamnesis.format.pth.TorchFiles.storages;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Seeded corruption of valid checkpoints (byte flips, truncation, splices): every outcome
 * must be a clean read or one typed {@link AnamnesisException}, never another exception.
 */
class CorruptionFuzzTest {
    @TempDir
    Path dir;

    private static byte[] zipCheckpoint() {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("a").contiguous("FloatStorage", "0", 2, 3)
                .unicode("t").tensor("FloatStorage", "0", 6, 1, new long[]{2, 2}, new long[]{1, 2})
                .unicode("meta").emptyDict().mark().unicode("lr").binFloat(0.5).unicode("n").integer(70000).setItems()
                .setItems().stop();
        return TorchFiles.Zip.checkpoint("archive", p.bytes(), storages("0", f32(1, 2, 3, 4, 5, 6))).bytes();
    }

    private static byte[] legacyCheckpoint() {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").global("torch._utils", "_rebuild_tensor_v2").mark()
                .mark().unicode("storage").global("torch", "FloatStorage").unicode("1").unicode("cpu").integer(4).none().tuple()
                .binPersId().integer(0).integer(2).integer(2).tuple2().integer(2).integer(1).tuple2()
                .newFalse().orderedDict().tuple().reduce().setItems().stop();
        return TorchFiles.legacy(p.bytes(), storages("1", f32(1, 2, 3, 4)), Map.of("1", 4));
    }

    @Test
    void corruptedZipCheckpointsFailTypedOrReadCleanly() {
        fuzz(zipCheckpoint(), 800, 42);
    }

    @Test
    void corruptedLegacyCheckpointsFailTypedOrReadCleanly() {
        fuzz(legacyCheckpoint(), 800, 7);
    }

    private void fuzz(byte[] valid, int rounds, long seed) {
        Random rnd = new Random(seed);
        Path file = dir.resolve("fuzz.pth");
        int typed = 0;
        int clean = 0;
        for (int r = 0; r < rounds; r++) {
            byte[] b = valid.clone();
            switch (r % 3) {
                case 0 -> {
                    for (int k = 1 + rnd.nextInt(4); k > 0; k--) b[rnd.nextInt(b.length)] = (byte) rnd.nextInt(256);
                }
                case 1 -> b = Arrays.copyOf(b, rnd.nextInt(b.length));
                default -> {
                    int at = rnd.nextInt(b.length);
                    int len = Math.min(b.length - at, 1 + rnd.nextInt(16));
                    int from = rnd.nextInt(b.length - len + 1);
                    System.arraycopy(valid, from, b, at, len);
                }
            }
            TorchFiles.write(file, b);
            try (TensorArchive a = new PthReader().open(file, ParseLimits.defaults()); Arena arena = Arena.ofConfined()) {
                for (TensorEntry e : a.tensors()) {
                    assertThat(a.data(e, arena).byteSize()).isEqualTo(e.byteSize());
                }
                a.properties();
                a.metadata();
                clean++;
            } catch (AnamnesisException expected) {
                typed++;
            } catch (RuntimeException | Error e) {
                throw new AssertionError("round " + r + ": untyped " + e + " for bytes " + java.util.HexFormat.of().formatHex(b), e);
            }
        }
        assertThat(typed).as("corruptions refused").isPositive();
        assertThat(typed + clean).isEqualTo(rounds);
    }
}
