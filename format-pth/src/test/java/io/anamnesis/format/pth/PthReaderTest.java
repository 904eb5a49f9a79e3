package io.anamnesis.format.pth;

import io.anamnesis.api.DType;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.RecoveryPlan;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.FileProbe;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static io.anamnesis.format.pth.TorchFiles.f32;
import static io.anamnesis.format.pth.TorchFiles.iota;
import static io.anamnesis.format.pth.TorchFiles.storages;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PthReaderTest {
    @TempDir
    Path dir;

    private final PthReader reader = new PthReader();

    private TensorArchive open(byte[] file) throws Exception {
        return reader.open(TorchFiles.write(dir.resolve("model.pth"), file), ParseLimits.defaults());
    }

    private static float[] floats(MemorySegment s) {
        return s.toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
    }

    private static byte[] stateDict(String prefix, PickleWriter body, Map<String, byte[]> storages) {
        return TorchFiles.Zip.checkpoint(prefix, body.bytes(), storages).bytes();
    }

    @Test
    void readsContiguousTensorZeroCopyFromTheMappedRecord() throws Exception {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").contiguous("FloatStorage", "0", 2, 3)
                .setItems().stop();
        try (TensorArchive a = open(stateDict("archive", p, storages("0", f32(1, 2, 3, 4, 5, 6))));
             Arena arena = Arena.ofConfined()) {
            TensorEntry e = a.tensors().getFirst();
            assertThat(e.name()).isEqualTo("w");
            assertThat(e.dtype()).isEqualTo(DType.F32);
            assertThat(e.shape().toArray()).containsExactly(2, 3);
            assertThat(e.byteSize()).isEqualTo(24);
            MemorySegment data = a.data(e, arena);
            assertThat(data.isMapped()).as("contiguous data is a view of the file, not a copy").isTrue();
            assertThat(floats(data)).containsExactly(1, 2, 3, 4, 5, 6);
        }
    }

    @Test
    void findsTheRecordPrefixFromTheDataPklRecord() throws Exception {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").contiguous("FloatStorage", "0", 2)
                .setItems().stop();
        try (TensorArchive a = open(stateDict("checkpoint_epoch3", p, storages("0", f32(7, 8))));
             Arena arena = Arena.ofConfined()) {
            assertThat(a.properties()).containsEntry("record prefix", "checkpoint_epoch3").containsEntry("layout", "zip");
            assertThat(floats(a.data(a.tensor("w").orElseThrow(), arena))).containsExactly(7, 8);
        }
    }

    @Test
    void materializesATransposedViewRowMajor() throws Exception {
        // Storage 0..5 seen as size (3, 2) stride (1, 3): element [i][j] = storage[i + 3j].
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("t").tensor("FloatStorage", "0", 6, 0, new long[]{3, 2}, new long[]{1, 3})
                .setItems().stop();
        try (TensorArchive a = open(stateDict("archive", p, storages("0", f32(iota(6)))));
             Arena arena = Arena.ofConfined()) {
            MemorySegment data = a.data(a.tensor("t").orElseThrow(), arena);
            assertThat(data.isMapped()).isFalse();
            assertThat(floats(data)).containsExactly(0, 3, 1, 4, 2, 5);
        }
    }

    @Test
    void materializesStridedSliceChannelsLastAndExpandedViews() throws Exception {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                // every third column of a 5 x 12 storage: [i][j] = storage[12 i + 3 j], offset 1
                .unicode("cols").tensor("FloatStorage", "0", 60, 1, new long[]{5, 4}, new long[]{12, 3})
                // NCHW (1, 2, 2, 2) channels-last: strides (8, 1, 4, 2)
                .unicode("nhwc").tensor("FloatStorage", "1", 8, 0, new long[]{1, 2, 2, 2}, new long[]{8, 1, 4, 2})
                // a bias row broadcast over 2 rows: stride 0
                .unicode("bias").tensor("FloatStorage", "2", 3, 0, new long[]{2, 3}, new long[]{0, 1})
                // a scalar broadcast to (2, 2): all strides 0
                .unicode("fill").tensor("FloatStorage", "3", 1, 0, new long[]{2, 2}, new long[]{0, 0})
                .setItems().stop();
        try (TensorArchive a = open(stateDict("archive", p, storages(
                "0", f32(iota(60)), "1", f32(iota(8)), "2", f32(7, 8, 9), "3", f32(5))));
             Arena arena = Arena.ofConfined()) {
            assertThat(floats(a.data(a.tensor("cols").orElseThrow(), arena))).containsExactly(
                    1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 34, 37, 40, 43, 46, 49, 52, 55, 58);
            assertThat(floats(a.data(a.tensor("nhwc").orElseThrow(), arena))).containsExactly(0, 2, 4, 6, 1, 3, 5, 7);
            assertThat(floats(a.data(a.tensor("bias").orElseThrow(), arena))).containsExactly(7, 8, 9, 7, 8, 9);
            assertThat(floats(a.data(a.tensor("fill").orElseThrow(), arena))).containsExactly(5, 5, 5, 5);
            assertThat(a.tensor("fill").orElseThrow().byteSize()).isEqualTo(16);
        }
    }

    @Test
    void sharesOneStorageBetweenTiedWeightsAndOffsetViews() throws Exception {
        // embed and lm_head are one tensor; a and b are views at offsets 2 and 10 of storage 1.
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("embed.weight").contiguous("FloatStorage", "0", 2, 2).binPut(20)
                .unicode("lm_head.weight").binGet(20)
                .unicode("a").tensor("FloatStorage", "1", 20, 2, new long[]{6}, new long[]{1})
                .unicode("b").tensor("FloatStorage", "1", 20, 10, new long[]{2, 5}, new long[]{5, 1})
                .setItems().stop();
        try (TensorArchive a = open(stateDict("archive", p, storages("0", f32(1, 2, 3, 4), "1", f32(iota(20)))));
             Arena arena = Arena.ofConfined()) {
            assertThat(a.tensors().stream().map(TensorEntry::name)).containsExactly("embed.weight", "lm_head.weight", "a", "b");
            assertThat(floats(a.data(a.tensor("lm_head.weight").orElseThrow(), arena))).containsExactly(1, 2, 3, 4);
            assertThat(floats(a.data(a.tensor("a").orElseThrow(), arena))).containsExactly(2, 3, 4, 5, 6, 7);
            assertThat(floats(a.data(a.tensor("b").orElseThrow(), arena))).containsExactly(10, 11, 12, 13, 14, 15, 16, 17, 18, 19);
            assertThat(a.properties()).containsEntry("storages", "2");
        }
    }

    @Test
    void readsZeroDimAndEmptyTensorsWithoutRecords() throws Exception {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("scalar").tensor("FloatStorage", "0", 3, 2, new long[]{}, new long[]{})
                .unicode("empty").tensor("LongStorage", "1", 0, 0, new long[]{0, 4}, new long[]{4, 1})
                .setItems().stop();
        // Storage 1 has no record at all, as torch may write for empty storages.
        try (TensorArchive a = open(stateDict("archive", p, storages("0", f32(1, 2, 3))));
             Arena arena = Arena.ofConfined()) {
            TensorEntry s = a.tensor("scalar").orElseThrow();
            assertThat(s.shape().rank()).isZero();
            assertThat(floats(a.data(s, arena))).containsExactly(3);
            TensorEntry e = a.tensor("empty").orElseThrow();
            assertThat(e.dtype()).isEqualTo(DType.I64);
            assertThat(e.shape().toArray()).containsExactly(0, 4);
            assertThat(a.data(e, arena).byteSize()).isZero();
        }
    }

    @Test
    void mapsEveryStorageTypeToItsDType() throws Exception {
        Map<String, DType> types = new java.util.LinkedHashMap<>();
        types.put("FloatStorage", DType.F32);
        types.put("HalfStorage", DType.F16);
        types.put("BFloat16Storage", DType.BF16);
        types.put("DoubleStorage", DType.F64);
        types.put("ByteStorage", DType.U8);
        types.put("CharStorage", DType.I8);
        types.put("ShortStorage", DType.I16);
        types.put("IntStorage", DType.I32);
        types.put("LongStorage", DType.I64);
        types.put("BoolStorage", DType.BOOL);
        types.put("ComplexFloatStorage", DType.C64);
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark();
        Map<String, byte[]> st = new java.util.LinkedHashMap<>();
        int k = 0;
        for (var e : types.entrySet()) {
            p.unicode(e.getKey()).contiguous(e.getKey(), Integer.toString(k), 3);
            byte[] b = new byte[3 * e.getValue().elementBytes()];
            for (int i = 0; i < b.length; i++) b[i] = (byte) (i + 1);
            st.put(Integer.toString(k++), b);
        }
        p.setItems().stop();
        try (TensorArchive a = open(stateDict("archive", p, st)); Arena arena = Arena.ofConfined()) {
            k = 0;
            for (var e : types.entrySet()) {
                TensorEntry t = a.tensor(e.getKey()).orElseThrow();
                assertThat(t.dtype()).as(e.getKey()).isEqualTo(e.getValue());
                assertThat(a.data(t, arena).toArray(ValueLayout.JAVA_BYTE)).as(e.getKey()).isEqualTo(st.get(Integer.toString(k++)));
            }
        }
    }

    @Test
    void swapsBigEndianStoragesWhenTheByteorderRecordSaysBig() throws Exception {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("f").contiguous("FloatStorage", "0", 3)
                .unicode("t").tensor("FloatStorage", "0", 3, 0, new long[]{3}, new long[]{1})
                .unicode("s").contiguous("ShortStorage", "1", 2)
                .setItems().stop();
        TorchFiles.Zip z = new TorchFiles.Zip().record("archive/data.pkl", p.bytes())
                .record("archive/byteorder", "big".getBytes(StandardCharsets.US_ASCII))
                .record("archive/data/0", TorchFiles.f32BigEndian(1.5f, -2f, 1e-3f))
                .record("archive/data/1", TorchFiles.i16BigEndian((short) 0x0102, (short) -2));
        try (TensorArchive a = open(z.bytes()); Arena arena = Arena.ofConfined()) {
            assertThat(floats(a.data(a.tensor("f").orElseThrow(), arena))).containsExactly(1.5f, -2f, 1e-3f);
            assertThat(a.data(a.tensor("s").orElseThrow(), arena).toArray(ValueLayout.JAVA_BYTE))
                    .containsExactly(0x02, 0x01, 0xFE, 0xFF);
            assertThat(a.properties().get("byte order")).startsWith("big-endian");
        }
    }

    @Test
    void refusesComplex128AndQuantizedTensorsNamingThem() {
        PickleWriter c128 = PickleWriter.proto(2).orderedDict().mark()
                .unicode("ok").contiguous("FloatStorage", "0", 1)
                .unicode("z").contiguous("ComplexDoubleStorage", "1", 1)
                .setItems().stop();
        assertThatThrownBy(() -> open(stateDict("archive", c128, storages("0", f32(1), "1", new byte[16]))))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("'z'").hasMessageContaining("ComplexDoubleStorage");

        PickleWriter q = PickleWriter.proto(2).orderedDict().mark()
                .unicode("q").global("torch._utils", "_rebuild_qtensor").mark().none().tuple().reduce()
                .setItems().stop();
        assertThatThrownBy(() -> open(stateDict("archive", q, storages())))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("'q'").hasMessageContaining("quantized");
    }

    @Test
    void namesEveryTensorOfANestedTrainingCheckpointByDottedPath() throws Exception {
        PickleWriter p = PickleWriter.proto(2).emptyDict().mark()
                .unicode("model").orderedDict().mark()
                .unicode("layer.weight").contiguous("FloatStorage", "0", 2)
                .setItems()
                .unicode("optimizer").emptyDict().mark()
                .unicode("state").emptyDict().mark()
                .integer(0).emptyDict().mark().unicode("exp_avg").contiguous("FloatStorage", "1", 2)
                .unicode("step").contiguous("FloatStorage", "2").setItems()
                .setItems()
                .unicode("param_groups").emptyList().mark()
                .emptyDict().mark().unicode("lr").binFloat(0.001).unicode("betas").binFloat(0.9).binFloat(0.999).tuple2()
                .unicode("amsgrad").newFalse().unicode("eps").binFloat(1e-8).unicode("params").emptyList().integer(0).append()
                .setItems()
                .appends()
                .setItems()
                .unicode("epoch").integer(3)
                .unicode("name").unicode("x")
                .unicode("big").integer(1L << 40)
                .setItems().stop();
        try (TensorArchive a = open(stateDict("archive", p, storages("0", f32(1, 2), "1", f32(3, 4), "2", f32(5))))) {
            assertThat(a.tensors().stream().map(TensorEntry::name)).containsExactly(
                    "model.layer.weight", "optimizer.state.0.exp_avg", "optimizer.state.0.step");
            assertThat(a.metadata()).containsExactly(
                    Map.entry("optimizer.param_groups.0.lr", "0.001"),
                    Map.entry("optimizer.param_groups.0.betas.0", "0.9"),
                    Map.entry("optimizer.param_groups.0.betas.1", "0.999"),
                    Map.entry("optimizer.param_groups.0.amsgrad", "False"),
                    Map.entry("optimizer.param_groups.0.eps", "1e-08"),
                    Map.entry("optimizer.param_groups.0.params.0", "0"),
                    Map.entry("epoch", "3"),
                    Map.entry("name", "x"),
                    Map.entry("big", "1099511627776"));
            assertThat(a.structuredMetadata()).containsEntry("epoch", 3L).containsEntry("optimizer.param_groups.0.lr", 0.001);
        }
    }

    @Test
    void givesNonTensorValuesTypedAndLeavesOutThoseWithNoTypedForm() throws Exception {
        PickleWriter p = PickleWriter.proto(2).emptyDict().mark()
                .unicode("w").contiguous("FloatStorage", "0", 2)
                .unicode("epoch").integer(-3)
                .unicode("lr").binFloat(0.001)
                .unicode("amsgrad").newFalse()
                .unicode("name").unicode("é\u0000x")
                .unicode("scheduler").none()
                .setItems().stop();
        try (TensorArchive a = open(stateDict("archive", p, storages("0", f32(1, 2))))) {
            assertThat(a.metadata()).containsOnlyKeys("epoch", "lr", "amsgrad", "name", "scheduler");
            assertThat(a.typedMetadata()).containsExactly(
                    Map.entry("epoch", new MetaValue.Int(MetaValue.Type.I64, -3)),
                    Map.entry("lr", new MetaValue.Real(MetaValue.Type.F64, 0.001)),
                    Map.entry("amsgrad", new MetaValue.Bool(false)),
                    Map.entry("name", new MetaValue.Str("é\u0000x")));
            // a conversion drops the None and says so
            RecoveryPlan plan = Anamnesis.of(List.of(), List.of(), List.of()).plan(a, DType.F32);
            assertThat(plan.droppedMetadata()).containsOnlyKeys("scheduler");
            assertThat(plan.droppedMetadata().get("scheduler")).contains("None");
            assertThat(plan.toOutputPlan().keyValues()).containsOnlyKeys("epoch", "lr", "amsgrad", "name");
        }
    }

    @Test
    void ignoresTheMetadataAttributeOfAStateDictAndUnwrapsParameters() throws Exception {
        // OrderedDict.__reduce__ pickles _metadata as BUILD state; nn.Parameter goes through
        // _rebuild_parameter(data, requires_grad, hooks).
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("0.weight").global("torch._utils", "_rebuild_parameter").mark()
                .contiguous("FloatStorage", "0", 2).newTrue().orderedDict().tuple().reduce()
                .setItems()
                .emptyDict().unicode("_metadata").orderedDict().mark()
                .unicode("").emptyDict().unicode("version").integer(1).setItem()
                .setItems().setItem()
                .build().stop();
        try (TensorArchive a = open(stateDict("archive", p, storages("0", f32(1, 2))));
             Arena arena = Arena.ofConfined()) {
            assertThat(a.tensors().stream().map(TensorEntry::name)).containsExactly("0.weight");
            assertThat(a.metadata()).isEmpty();
            assertThat(floats(a.data(a.tensors().getFirst(), arena))).containsExactly(1, 2);
        }
    }

    @Test
    void readsProtocolFourWithFrameMemoizeAndStackGlobal() throws Exception {
        PickleWriter body = new PickleWriter()
                .shortUnicode("collections").memoize().shortUnicode("OrderedDict").memoize().stackGlobal().memoize()
                .emptyTuple().reduce().memoize().mark()
                .shortUnicode("a").memoize()
                .shortUnicode("torch._utils").memoize().shortUnicode("_rebuild_tensor_v2").memoize().stackGlobal().memoize()
                .mark().mark().shortUnicode("storage").shortUnicode("torch").shortUnicode("FloatStorage").stackGlobal()
                .shortUnicode("0").shortUnicode("cpu").integer(2).tuple().binPersId()
                .integer(0).integer(2).tuple1().integer(1).tuple1().newFalse()
                .binGet(2).emptyTuple().reduce().tuple().reduce()
                .setItems().stop();
        byte[] b = body.bytes();
        byte[] pickle = PickleWriter.proto(4).frame(b.length).raw(b).bytes();
        try (TensorArchive a = open(TorchFiles.Zip.checkpoint("archive", pickle, storages("0", f32(3, 4))).bytes());
             Arena arena = Arena.ofConfined()) {
            assertThat(floats(a.data(a.tensor("a").orElseThrow(), arena))).containsExactly(3, 4);
            assertThat(a.properties()).containsEntry("pickle protocol", "4");
        }
    }

    @Test
    void reportsLayoutProtocolGlobalsAndTheWeightsOnlyVerdict() throws Exception {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").contiguous("HalfStorage", "0", 1)
                .setItems().stop();
        try (TensorArchive a = open(stateDict("archive", p, storages("0", new byte[2])))) {
            assertThat(a.format()).isEqualTo("pth");
            assertThat(a.properties()).containsEntry("layout", "zip")
                    .containsEntry("record prefix", "archive")
                    .containsEntry("pickle protocol", "2")
                    .containsEntry("globals", "collections.OrderedDict, torch._utils._rebuild_tensor_v2, torch.HalfStorage")
                    .containsEntry("weights_only", "accepted by torch.load(weights_only=True)");
        }
    }

    @Test
    void saysWhenTorchWouldRefuseABuildOnAPlainDict() throws Exception {
        // Globals all allowed, but torch's weights_only unpickler BUILDs only tensors,
        // parameters and OrderedDicts.
        PickleWriter p = PickleWriter.proto(2).emptyDict().mark()
                .unicode("w").contiguous("FloatStorage", "0", 1)
                .setItems().emptyDict().build().stop();
        try (TensorArchive a = open(stateDict("archive", p, storages("0", f32(1))))) {
            assertThat(a.properties()).containsEntry("weights_only", "would be rejected: BUILD on a plain dict");
        }
    }

    @Test
    void findsTheEndRecordBehindALongArchiveComment() throws Exception {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").contiguous("FloatStorage", "0", 1).setItems().stop();
        TorchFiles.Zip z = TorchFiles.Zip.checkpoint("archive", p.bytes(), storages("0", f32(2)));
        z.comment = "c".repeat(5000);
        try (TensorArchive a = open(z.bytes()); Arena arena = Arena.ofConfined()) {
            assertThat(floats(a.data(a.tensor("w").orElseThrow(), arena))).containsExactly(2);
        }
    }

    @Test
    void readsTheLegacyStreamFormat() throws Exception {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").global("torch._utils", "_rebuild_tensor_v2").mark()
                .mark().unicode("storage").global("torch", "FloatStorage").unicode("140").unicode("cpu").integer(4).none().tuple()
                .binPersId().integer(0).integer(2).integer(2).tuple2().integer(1).integer(2).tuple2()
                .newFalse().orderedDict().tuple().reduce()
                .unicode("v").global("torch._utils", "_rebuild_tensor_v2").mark()
                .mark().unicode("storage").global("torch", "LongStorage").unicode("99").unicode("cpu").integer(3).none().tuple()
                .binPersId().integer(1).integer(2).tuple1().integer(1).tuple1()
                .newFalse().orderedDict().tuple().reduce()
                .setItems().stop();
        byte[] file = TorchFiles.legacy(p.bytes(),
                storages("140", f32(1, 2, 3, 4), "99", TorchFiles.i64(10, 20, 30)),
                Map.of("140", 4, "99", 8));
        try (TensorArchive a = open(file); Arena arena = Arena.ofConfined()) {
            assertThat(a.properties()).containsEntry("layout", "legacy");
            // size (2, 2) stride (1, 2): transposed
            assertThat(floats(a.data(a.tensor("w").orElseThrow(), arena))).containsExactly(1, 3, 2, 4);
            assertThat(a.data(a.tensor("v").orElseThrow(), arena).toArray(ValueLayout.JAVA_LONG_UNALIGNED))
                    .containsExactly(20, 30);
        }
    }

    @Test
    void readsZip64SizesAndOffsets() throws Exception {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").contiguous("FloatStorage", "0", 3).setItems().stop();
        Map<String, byte[]> records = new java.util.LinkedHashMap<>();
        records.put("archive/data.pkl", p.bytes());
        records.put("archive/data/0", f32(4, 5, 6));
        try (TensorArchive a = open(TorchFiles.zip64(records)); Arena arena = Arena.ofConfined()) {
            assertThat(floats(a.data(a.tensor("w").orElseThrow(), arena))).containsExactly(4, 5, 6);
        }
    }

    @Test
    void detectsByContentNotByExtension() {
        byte[] zip = stateDict("pytorch_model", PickleWriter.proto(2).emptyDict().stop(), storages());
        assertThat(reader.canRead(probe("pytorch_model.bin", zip))).isTrue();
        assertThat(reader.canRead(probe("weird.name", zip))).isTrue();
        byte[] npz = new TorchFiles.Zip().record("a.npy", new byte[10]).bytes();
        assertThat(reader.canRead(probe("x.pth", npz))).isFalse();
        byte[] legacy = TorchFiles.legacy(PickleWriter.proto(2).emptyDict().stop().bytes(), storages(), Map.of());
        assertThat(reader.canRead(probe("old.pt", legacy))).isTrue();
        assertThat(reader.canRead(probe("x.pth", PickleWriter.proto(2).emptyDict().stop().bytes()))).isFalse();
        assertThat(reader.canRead(probe("x.pth", new byte[0]))).isFalse();
        assertThat(reader.fileExtensions()).containsExactly("pth", "pt", "bin", "ckpt");
    }

    private static FileProbe probe(String name, byte[] bytes) {
        return new FileProbe(name, bytes.length, ByteBuffer.wrap(bytes, 0, Math.min(bytes.length, FileProbe.HEAD_BYTES)).slice());
    }

    @Test
    void dataStaysValidAfterTheArchiveClosesUntilTheArenaDoes() throws Exception {
        PickleWriter p = PickleWriter.proto(2).orderedDict().mark()
                .unicode("w").contiguous("FloatStorage", "0", 2).setItems().stop();
        Path file = TorchFiles.write(dir.resolve("m.pt"), stateDict("archive", p, storages("0", f32(9, 8))));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data;
            try (TensorArchive a = reader.open(file, ParseLimits.defaults())) {
                data = a.data(a.tensors().getFirst(), arena);
            }
            assertThat(floats(data)).containsExactly(9, 8);
        }
        assertThat(Files.size(file)).isPositive();
    }

    @Test
    void keepsBareTensorAndListCheckpointsByIndex() throws Exception {
        PickleWriter p = PickleWriter.proto(2).emptyList().mark()
                .contiguous("FloatStorage", "0", 1).contiguous("FloatStorage", "1", 1)
                .appends().stop();
        try (TensorArchive a = open(stateDict("archive", p, storages("0", f32(1), "1", f32(2))))) {
            assertThat(a.tensors().stream().map(TensorEntry::name)).isEqualTo(List.of("0", "1"));
        }
    }
}
