package io.anamnesis.format.pth;

import io.anamnesis.api.DType;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The GLOBALs a checkpoint may name: exactly those {@code torch.load(weights_only=True)}
 * accepts by default (torch/_weights_only_unpickler.py, {@code _get_allowed_globals}), as
 * facts, plus the storage types' element types. Everything else is refused before anything
 * is built. Note what is absent: {@code torch.storage._load_from_bytes} (it unpickles again),
 * {@code builtins.eval}/{@code exec}/{@code getattr}, {@code os}, {@code posix},
 * {@code subprocess}, {@code copyreg._reconstructor}, {@code builtins.frozenset}.
 */
final class TorchGlobals {
    private TorchGlobals() {
    }

    /** Legacy storage class name -> element type; {@code null} marks types we refuse to decode. */
    private static final Map<String, DType> STORAGE_TYPES = new HashMap<>();
    /** torch dtype object name (torch.float32) -> element type; null: not decoded. */
    private static final Map<String, DType> DTYPES = new HashMap<>();
    private static final Set<String> ALLOWED = new HashSet<>();

    static final String REBUILD_TENSOR = "torch._utils._rebuild_tensor";
    static final String REBUILD_TENSOR_V2 = "torch._utils._rebuild_tensor_v2";
    static final String REBUILD_TENSOR_V3 = "torch._utils._rebuild_tensor_v3";
    static final String REBUILD_PARAMETER = "torch._utils._rebuild_parameter";
    static final String REBUILD_PARAMETER_WITH_STATE = "torch._utils._rebuild_parameter_with_state";
    static final String REBUILD_FROM_TYPE_V2 = "torch._tensor._rebuild_from_type_v2";

    private static void storage(String name, DType dtype) {
        STORAGE_TYPES.put(name, dtype);
        ALLOWED.add("torch." + name);
    }

    private static void dtype(String name, DType dtype) {
        DTYPES.put(name, dtype);
        ALLOWED.add("torch." + name);
    }

    static {
        storage("FloatStorage", DType.F32);
        storage("HalfStorage", DType.F16);
        storage("BFloat16Storage", DType.BF16);
        storage("DoubleStorage", DType.F64);
        storage("ByteStorage", DType.U8);
        storage("CharStorage", DType.I8);
        storage("ShortStorage", DType.I16);
        storage("IntStorage", DType.I32);
        storage("LongStorage", DType.I64);
        storage("BoolStorage", DType.BOOL);
        storage("ComplexFloatStorage", DType.C64);
        storage("ComplexDoubleStorage", null);
        storage("QUInt8Storage", null);
        storage("QInt8Storage", null);
        storage("QInt32Storage", null);
        storage("QUInt4x2Storage", null);
        storage("QUInt2x4Storage", null);
        ALLOWED.add("torch.storage.TypedStorage");
        ALLOWED.add("torch.storage.UntypedStorage");
        ALLOWED.add("torch.UntypedStorage");

        dtype("float32", DType.F32);
        dtype("float16", DType.F16);
        dtype("bfloat16", DType.BF16);
        dtype("float64", DType.F64);
        dtype("uint8", DType.U8);
        dtype("int8", DType.I8);
        dtype("int16", DType.I16);
        dtype("int32", DType.I32);
        dtype("int64", DType.I64);
        dtype("bool", DType.BOOL);
        dtype("complex64", DType.C64);
        dtype("uint16", DType.U16);
        dtype("uint32", DType.U32);
        dtype("uint64", DType.U64);
        dtype("float8_e5m2", DType.F8_E5M2);
        dtype("float8_e4m3fn", DType.F8_E4M3);
        dtype("float8_e5m2fnuz", DType.F8_E5M2FNUZ);
        dtype("float8_e4m3fnuz", DType.F8_E4M3FNUZ);
        dtype("float8_e8m0fnu", DType.F8_E8M0);
        dtype("complex128", null);
        dtype("complex32", null);
        dtype("quint8", null);
        dtype("qint8", null);
        dtype("qint32", null);
        dtype("quint4x2", null);
        dtype("quint2x4", null);
        for (int bits = 1; bits < 8; bits++) {
            dtype("uint" + bits, null);
            dtype("int" + bits, null);
        }

        for (String f : new String[]{"_rebuild_parameter", "_rebuild_parameter_with_state", "_rebuild_qtensor",
                "_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_sparse_tensor",
                "_rebuild_meta_tensor_no_storage", "_rebuild_wrapper_subclass",
                "_rebuild_device_tensor_from_numpy", "_rebuild_device_tensor_from_cpu_tensor"}) {
            ALLOWED.add("torch._utils." + f);
        }
        ALLOWED.add(REBUILD_FROM_TYPE_V2);
        ALLOWED.add("collections.OrderedDict");
        ALLOWED.add("collections.Counter");
        ALLOWED.add("torch.nn.parameter.Parameter");
        ALLOWED.add("torch.serialization._get_layout");
        ALLOWED.add("torch.Size");
        ALLOWED.add("torch.Tensor");
        ALLOWED.add("torch.device");
        ALLOWED.add("_codecs.encode");
        ALLOWED.add("builtins.bytearray");
        ALLOWED.add("builtins.set");
        ALLOWED.add("builtins.complex");
        for (String q : new String[]{"per_tensor_affine", "per_tensor_symmetric", "per_channel_affine",
                "per_channel_symmetric", "per_channel_affine_float_qparams"}) {
            ALLOWED.add("torch." + q);
        }
        // Layouts that _get_layout may name are strings, not globals. The legacy tensor
        // classes (torch.FloatTensor, ...) are in torch's list too.
        for (String t : new String[]{"FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
                "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"}) {
            ALLOWED.add("torch." + t);
        }
    }

    /**
     * Python 2 module names a protocol-2 pickle written by Python 3 still uses
     * (pickle's IMPORT_MAPPING, as torch applies it before its allowlist check).
     */
    static String canonicalModule(String module) {
        return switch (module) {
            case "__builtin__" -> "builtins";
            case "copy_reg" -> "copyreg";
            default -> module;
        };
    }

    static boolean allowed(String module, String name) {
        return ALLOWED.contains(module + "." + name);
    }

    /** Whether the global names a storage type (allowed or not decoded). */
    static boolean isStorageType(PyValue.Global g) {
        return g.module().equals("torch") && STORAGE_TYPES.containsKey(g.name());
    }

    /** The element type of a storage type, empty when torch has it but we do not decode it. */
    static Optional<DType> storageDType(PyValue.Global g) {
        return Optional.ofNullable(STORAGE_TYPES.get(g.name()));
    }

    static boolean isDType(PyValue.Global g) {
        return g.module().equals("torch") && DTYPES.containsKey(g.name());
    }

    static Optional<DType> dtype(PyValue.Global g) {
        return Optional.ofNullable(DTYPES.get(g.name()));
    }
}
