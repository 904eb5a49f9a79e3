package io.anamnesis.format.pth;

import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.ErrorKind;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.SecurityViolationException;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.UnsupportedFeatureException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Map;
import java.util.zip.ZipEntry;

import static io.anamnesis.format.pth.TorchFiles.f32;
import static io.anamnesis.format.pth.TorchFiles.storages;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/** Files built to attack the reader: each must end in one typed error, never in a run of code, a hang or an OOM. */
class HostileCheckpointTest {
    @TempDir
    Path dir;

    private AnamnesisException refusal(byte[] file) {
        return refusal(file, ParseLimits.defaults());
    }

    private AnamnesisException refusal(byte[] file, ParseLimits limits) {
        Path p = TorchFiles.write(dir.resolve("hostile.pth"), file);
        return catchThrowableOfType(AnamnesisException.class, () -> {
            try (TensorArchive a = new PthReader().open(p, limits)) {
                throw new AssertionError("opened a hostile file with " + a.tensors().size() + " tensors");
            }
        });
    }

    private static byte[] zip(PickleWriter p, Map<String, byte[]> storages) {
        return TorchFiles.Zip.checkpoint("archive", p.bytes(), storages).bytes();
    }

    private static byte[] zip(byte[] pickle) {
        return TorchFiles.Zip.checkpoint("archive", pickle, storages()).bytes();
    }

    /** A state_dict with one good tensor, then {@code key: <callable>(arg)}. */
    private static PickleWriter stateDictCalling(PickleWriter callable) {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("weight").contiguous("FloatStorage", "0", 1)
                .unicode("extra");
        p.raw(callable.bytes());
        return p.mark().unicode("echo pwned").tuple().reduce().setItems().stop();
    }

    // ---------------------------------------------------------------- code execution

    @ParameterizedTest
    @CsvSource({"os,system", "posix,system", "nt,system", "builtins,eval", "builtins,exec", "__builtin__,eval",
            "subprocess,Popen", "builtins,getattr", "torch.storage,_load_from_bytes", "torch,load",
            "copy_reg,_reconstructor", "builtins,frozenset", "numpy.core.multiarray,_reconstruct"})
    void refusesGlobalsOutsideTheAllowlistNamingThem(String module, String name) {
        AnamnesisException e = refusal(zip(stateDictCalling(new PickleWriter().global(module, name)), storages("0", f32(1))));
        String canonical = module.equals("__builtin__") ? "builtins" : module.equals("copy_reg") ? "copyreg" : module;
        assertThat(e).isInstanceOf(SecurityViolationException.class).hasMessageContaining(canonical + "." + name);
        assertThat(e.kind()).isEqualTo(ErrorKind.SECURITY);
    }

    @Test
    void refusesAStackGlobalOutsideTheAllowlist() {
        PickleWriter g = new PickleWriter().shortUnicode("builtins").shortUnicode("eval").stackGlobal();
        AnamnesisException e = refusal(zip(stateDictCalling(g), storages("0", f32(1))));
        assertThat(e).isInstanceOf(SecurityViolationException.class).hasMessageContaining("builtins.eval");
    }

    @Test
    void refusesAStackGlobalWhoseNamesComeFromTheMemo() {
        PickleWriter p = PickleWriter.proto(4).shortUnicode("os").memoize().shortUnicode("system").memoize()
                .emptyList().binGet(0).binGet(1).stackGlobal().append().stop();
        assertThat(refusal(zip(p.bytes()))).isInstanceOf(SecurityViolationException.class).hasMessageContaining("os.system");
    }

    @Test
    void refusesAGlobalHiddenDeepInANestedOptimizerDict() {
        PickleWriter p = PickleWriter.proto(2).emptyDict().mark()
                .unicode("model").orderedDict().mark().unicode("w").contiguous("FloatStorage", "0", 1).setItems()
                .unicode("optimizer").emptyDict().mark()
                .unicode("state").emptyDict().mark().integer(0).emptyDict().mark()
                .unicode("exp_avg").emptyList().mark().emptyDict().mark()
                .unicode("hook").global("builtins", "exec").mark().unicode("import os").tuple().reduce()
                .setItems().appends()
                .setItems().setItems().setItems().setItems().stop();
        assertThat(refusal(zip(p, storages("0", f32(1))))).isInstanceOf(SecurityViolationException.class)
                .hasMessageContaining("builtins.exec");
    }

    @Test
    void refusesTheExtensionRegistryOpcodes() {
        byte[] p = PickleWriter.proto(2).op(0x82).raw(1).emptyTuple().reduce().stop().bytes();
        assertThat(refusal(zip(p))).isInstanceOf(SecurityViolationException.class);
    }

    @Test
    void refusesReduceOnSomethingThatIsNotAnAllowedGlobal() {
        byte[] p = PickleWriter.proto(2).unicode("os.system").emptyTuple().reduce().stop().bytes();
        assertThat(refusal(zip(p))).isInstanceOf(MalformedFileException.class);
    }

    // ---------------------------------------------------------------- resource exhaustion

    @Test
    void refusesTenThousandNestedListsWithALimitNotAStackOverflow() {
        PickleWriter p = PickleWriter.proto(2);
        for (int i = 0; i < 10_000; i++) p.emptyList();
        for (int i = 0; i < 9_999; i++) p.append();
        assertThat(refusal(zip(p.stop().bytes()))).isInstanceOf(LimitExceededException.class).hasMessageContaining("nesting");
    }

    @Test
    void refusesAContainerThatContainsItself() {
        // l = []; l.append(l): depth is charged again while walking.
        PickleWriter p = PickleWriter.proto(2).emptyList().binPut(0).binGet(0).append().stop();
        assertThat(refusal(zip(p.bytes()))).isInstanceOf(LimitExceededException.class);
    }

    @Test
    void boundsMemoReplayAmplification() {
        // L0 = [1]; L(k+1) = [Lk, Lk]: 50 levels, 2^50 paths from a few hundred bytes.
        PickleWriter p = PickleWriter.proto(2).emptyList().integer(1).append().binPut(0).op('0');
        for (int k = 1; k <= 50; k++) {
            p.emptyList().mark().binGet(k - 1).binGet(k - 1).appends().binPut(k).op('0');
        }
        byte[] file = zip(p.binGet(50).stop().bytes());
        assertThat(file.length).isLessThan(2_000);
        assertThat(refusal(file)).isInstanceOf(LimitExceededException.class).hasMessageContaining("visits");
    }

    @Test
    void boundsValuesAndMemoSlots() {
        PickleWriter p = PickleWriter.proto(2).emptyList();
        for (int i = 0; i < 2_000; i++) p.integer(i).append();
        ParseLimits small = ParseLimits.defaults().withMaxPickleValues(1_000);
        assertThat(refusal(zip(p.stop().bytes()), small)).isInstanceOf(LimitExceededException.class);
    }

    @Test
    void chargesHugeDeclaredLengthsBeforeAllocating() {
        // BINUNICODE of 4 GiB - 1, BINBYTES8 of 2^62, LONG4 of 2^31 - 1: a few bytes each.
        byte[] unicode = PickleWriter.proto(2).op('X').le(0xFFFF_FFFFL, 4).stop().bytes();
        byte[] bytes8 = PickleWriter.proto(4).op(0x8e).le(1L << 62, 8).stop().bytes();
        byte[] long4 = PickleWriter.proto(2).op(0x8b).le(Integer.MAX_VALUE, 4).stop().bytes();
        assertThat(refusal(zip(unicode))).isInstanceOf(LimitExceededException.class);
        assertThat(refusal(zip(bytes8))).isInstanceOf(LimitExceededException.class);
        assertThat(refusal(zip(long4))).isInstanceOf(LimitExceededException.class);
        // Within the limit but past the end of the pickle: truncated.
        byte[] shortString = PickleWriter.proto(2).op('X').le(1000, 4).raw(1, 2, 3).bytes();
        assertThat(refusal(zip(shortString))).isInstanceOf(MalformedFileException.class);
    }

    @Test
    void refusesAPickleLargerThanTheLimit() {
        PickleWriter p = PickleWriter.proto(2).emptyList();
        for (int i = 0; i < 100; i++) p.integer(i).append();
        ParseLimits tiny = new ParseLimits(100_000_000L, 1 << 20, 32, 1 << 20, 64 << 20, 1 << 26, 256, 64, 1 << 24, 64L << 30, 1024);
        assertThat(refusal(zip(p.stop().bytes()), tiny)).isInstanceOf(LimitExceededException.class).hasMessageContaining("data.pkl");
    }

    @Test
    void refusesAStorageOfTwoToTheSixtyElementsWithoutAllocating() {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").tensor("FloatStorage", "0", 1L << 60, 0, new long[]{1L << 30, 1L << 30}, new long[]{1L << 30, 1})
                .setItems().stop();
        assertThat(refusal(zip(p, storages("0", new byte[48])))).isInstanceOf(LimitExceededException.class);
    }

    @Test
    void refusesAnExpandedViewThatWouldMaterializeBeyondTheLimit() {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").tensor("FloatStorage", "0", 1, 0, new long[]{1L << 20, 1L << 20}, new long[]{0, 0})
                .setItems().stop();
        AnamnesisException e = refusal(zip(p, storages("0", f32(1))));
        assertThat(e).isInstanceOf(LimitExceededException.class);
        assertThat(e.tensor()).contains("w");
    }

    @Test
    void boundsTheTotalOfManyExpandedViews() {
        // 300 views of one 4-byte storage, each 2^28 elements wide (1 GiB): 300 GiB from ~20 KB.
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark();
        for (int i = 0; i < 300; i++) {
            p.unicode("v" + i).tensor("FloatStorage", "0", 1, 0, new long[]{1L << 28}, new long[]{0});
        }
        AnamnesisException e = refusal(zip(p.setItems().stop(), storages("0", f32(1))));
        assertThat(e).isInstanceOf(LimitExceededException.class).hasMessageContaining("add up");
    }

    @Test
    void refusesOverlappingZipRecords() {
        // Two central-directory entries naming the same local header: every storage read twice.
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("a").contiguous("FloatStorage", "0", 2)
                .unicode("b").contiguous("FloatStorage", "1", 2).setItems().stop();
        byte[] z = zip(p, storages("0", f32(1, 2), "1", f32(3, 4)));
        // Point the directory entry of archive/data/1 at the local header of archive/data/0.
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(z).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        int local0 = -1;
        int central1 = -1;
        for (int i = 0; i + 4 <= z.length; i++) {
            int sig = b.getInt(i);
            if (sig == 0x04034b50 && nameAt(z, i + 30, b.getShort(i + 26)).equals("archive/data/0")) local0 = i;
            if (sig == 0x02014b50 && nameAt(z, i + 46, b.getShort(i + 28)).equals("archive/data/1")) central1 = i;
        }
        assertThat(local0).isPositive();
        assertThat(central1).isPositive();
        b.putInt(central1 + 42, local0);
        assertThat(refusal(z)).isInstanceOf(MalformedFileException.class).hasMessageContaining("overlap");
    }

    @Test
    void chargesTheZipDirectoryAgainstTheHeaderLimitAsItIsRead() throws Exception {
        // 6,000 extra records of 86 directory bytes each: 516 KB of directory, over a header
        // limit of 0 plus the allowance of the end-record search (4 bytes x 64 KiB positions)
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").contiguous("FloatStorage", "0", 1).setItems().stop();
        TorchFiles.Zip z = TorchFiles.Zip.checkpoint("archive", p.bytes(), storages("0", f32(1)));
        for (int i = 0; i < 6000; i++) z.record(String.format("archive/extra/%026d", i), new byte[0]);
        Path file = z.write(dir, "many-records.pth");
        try (TensorArchive a = new PthReader().open(file, ParseLimits.defaults())) {
            assertThat(a.properties()).containsEntry("records", "6003");
        }
        assertThat(refusal(Files.readAllBytes(file), ParseLimits.defaults().withMaxHeaderBytes(0)))
                .isInstanceOf(LimitExceededException.class).hasMessageContaining("zip directory");
    }

    @Test
    void aDiskThatFailsWhileTheDirectoryIsReadIsAnIoErrorNotACorruptZip() throws Exception {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").contiguous("FloatStorage", "0", 1).setItems().stop();
        Path file = TorchFiles.Zip.checkpoint("archive", p.bytes(), storages("0", f32(1))).write(dir, "disk.pth");
        CountingChannel ch = new CountingChannel(FileChannel.open(file, StandardOpenOption.READ));
        ch.failReadsAfter = 4; // the magic number is read, then the disk fails
        assertThatThrownBy(() -> PthReader.open(file, ch, ParseLimits.defaults()))
                .isInstanceOf(TensorIOException.class).hasMessageContaining("Input/output error");
    }

    private static String nameAt(byte[] z, int at, short len) {
        if (at + len > z.length || len < 0) return "";
        return new String(z, at, len, java.nio.charset.StandardCharsets.UTF_8);
    }

    // ---------------------------------------------------------------- malformed containers

    @Test
    void refusesARecordShorterThanItsStorage() {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").contiguous("FloatStorage", "0", 1000).setItems().stop();
        AnamnesisException e = refusal(zip(p, storages("0", new byte[48])));
        assertThat(e).isInstanceOf(MalformedFileException.class).hasMessageContaining("48").hasMessageContaining("4000");
        assertThat(e.tensor()).contains("w");
    }

    @Test
    void refusesAMissingRecord() {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").contiguous("FloatStorage", "7", 2).setItems().stop();
        AnamnesisException e = refusal(zip(p, storages("0", f32(1, 2))));
        assertThat(e).isInstanceOf(MalformedFileException.class).hasMessageContaining("archive/data/7");
    }

    @Test
    void refusesAViewThatReachesPastItsStorage() {
        // (4, 4) at offset 2 over 12 elements: the last element read is 2 + 3*4 + 3 = 17.
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").tensor("FloatStorage", "0", 12, 2, new long[]{4, 4}, new long[]{4, 1}).setItems().stop();
        AnamnesisException e = refusal(zip(p, storages("0", new byte[48])));
        assertThat(e).isInstanceOf(MalformedFileException.class).hasMessageContaining("element 17");
    }

    @Test
    void refusesTwoDeclarationsOfOneStorageThatDisagree() {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("a").contiguous("FloatStorage", "0", 2)
                .unicode("b").contiguous("HalfStorage", "0", 4)
                .setItems().stop();
        assertThat(refusal(zip(p, storages("0", new byte[8])))).isInstanceOf(MalformedFileException.class);
    }

    @Test
    void refusesATruncatedArchiveAtEveryCut() {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").contiguous("FloatStorage", "0", 64).setItems().stop();
        byte[] whole = zip(p, storages("0", new byte[256]));
        for (int cut : new int[]{whole.length - 1, whole.length - 22, whole.length / 2, 100, 30, 4, 1}) {
            AnamnesisException e = refusal(Arrays.copyOf(whole, cut));
            assertThat(e).as("cut at " + cut).isInstanceOf(MalformedFileException.class);
        }
    }

    @Test
    void saysWhatIsWrongWithABrokenZipInZipTermsNotJavaOnes() {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").contiguous("FloatStorage", "0", 64).setItems().stop();
        byte[] whole = zip(p, storages("0", new byte[256]));
        for (int cut : new int[]{whole.length - 1, whole.length - 30, whole.length / 2, 10}) {
            assertThat(refusal(Arrays.copyOf(whole, cut))).as("cut at " + cut).isInstanceOf(MalformedFileException.class)
                    .hasMessageContaining("the zip archive is truncated or corrupt: ")
                    .hasMessageNotContaining("FileChannelImpl").hasMessageNotContaining("Error reading Zip content");
        }
    }

    @Test
    void refusesAnEmptyFileAndGarbage() {
        assertThat(refusal(new byte[0])).isInstanceOf(MalformedFileException.class);
        assertThat(refusal("hello world".getBytes())).isInstanceOf(MalformedFileException.class);
    }

    @Test
    void refusesACompressedStorageRecord() {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").contiguous("FloatStorage", "0", 2).setItems().stop();
        TorchFiles.Zip z = TorchFiles.Zip.checkpoint("archive", p.bytes(), storages("0", f32(1, 2)));
        z.method = ZipEntry.DEFLATED;
        assertThat(refusal(z.bytes())).isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("compressed");
    }

    @Test
    void refusesAZipWithoutDataPkl() {
        byte[] z = new TorchFiles.Zip().record("archive/other.pkl", new byte[3]).bytes();
        assertThat(refusal(z)).isInstanceOf(MalformedFileException.class).hasMessageContaining("data.pkl");
    }

    @Test
    void refusesPickleStructuralErrors() {
        assertThat(refusal(zip(PickleWriter.proto(2).append().stop().bytes()))).isInstanceOf(MalformedFileException.class);
        assertThat(refusal(zip(PickleWriter.proto(2).binGet(9).stop().bytes()))).isInstanceOf(MalformedFileException.class);
        assertThat(refusal(zip(PickleWriter.proto(2).setItems().stop().bytes()))).isInstanceOf(MalformedFileException.class);
        assertThat(refusal(zip(PickleWriter.proto(2).emptyList().bytes()))).isInstanceOf(MalformedFileException.class);
        assertThat(refusal(zip(PickleWriter.proto(2).op(0xff).stop().bytes()))).isInstanceOf(MalformedFileException.class);
        assertThat(refusal(zip(PickleWriter.proto(9).none().stop().bytes()))).isInstanceOf(UnsupportedFeatureException.class);
    }

    @Test
    void refusesATruncatedLegacyStream() throws Exception {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").global("torch._utils", "_rebuild_tensor_v2").mark()
                .mark().unicode("storage").global("torch", "FloatStorage").unicode("1").unicode("cpu").integer(4).none().tuple()
                .binPersId().integer(0).integer(4).tuple1().integer(1).tuple1()
                .newFalse().orderedDict().tuple().reduce().setItems().stop();
        byte[] whole = TorchFiles.legacy(p.bytes(), storages("1", f32(1, 2, 3, 4)), Map.of("1", 4));
        assertThat(refusal(Arrays.copyOf(whole, whole.length - 1))).isInstanceOf(MalformedFileException.class);
        assertThat(Files.exists(dir)).isTrue();
    }
}
