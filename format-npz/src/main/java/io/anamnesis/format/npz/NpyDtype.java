package io.anamnesis.format.npz;

import io.anamnesis.api.DType;
import io.anamnesis.api.UnsupportedFeatureException;

import java.nio.ByteOrder;

/**
 * A NumPy {@code descr} string ({@code '<f4'}, {@code '>i8'}, {@code '|b1'}) mapped to a dtype
 * and a byte order.
 *
 * @param dtype     the element type anamnesis exposes
 * @param byteOrder how the file stores multi-byte elements
 */
record NpyDtype(DType dtype, ByteOrder byteOrder) {

    /** True when bytes must be swapped to reach little-endian. */
    boolean swapped() {
        return byteOrder == ByteOrder.BIG_ENDIAN && dtype.isByteSized() && dtype.elementBytes() > 1;
    }

    /** @throws UnsupportedFeatureException for object, structured, string, complex128 and other types */
    static NpyDtype of(String descr, String array) {
        if (descr.length() < 2) throw UnsupportedFeatureException.inTensor(array, "unknown NumPy dtype '" + descr + "'");
        char order = descr.charAt(0);
        String code = descr.substring(1);
        ByteOrder byteOrder = switch (order) {
            case '<', '|' -> ByteOrder.LITTLE_ENDIAN;
            case '=' -> ByteOrder.nativeOrder();
            case '>' -> ByteOrder.BIG_ENDIAN;
            default -> throw UnsupportedFeatureException.inTensor(array, "unknown NumPy dtype '" + descr + "'");
        };
        DType dtype = switch (code) {
            case "b1" -> DType.BOOL;
            case "i1" -> DType.I8;
            case "u1" -> DType.U8;
            case "i2" -> DType.I16;
            case "u2" -> DType.U16;
            case "i4" -> DType.I32;
            case "u4" -> DType.U32;
            case "i8" -> DType.I64;
            case "u8" -> DType.U64;
            case "f2" -> DType.F16;
            case "f4" -> DType.F32;
            case "f8" -> DType.F64;
            case "c8" -> DType.C64;
            // JAX / ml_dtypes save bfloat16 as a 2-byte void: the only reading that makes it a number.
            case "V2" -> DType.BF16;
            case "O" -> throw UnsupportedFeatureException.inTensor(array,
                    "object arrays need pickle to load and are not supported (descr '" + descr + "')");
            case "c16" -> throw UnsupportedFeatureException.inTensor(array,
                    "complex128 has no safetensors dtype and is not supported");
            default -> throw UnsupportedFeatureException.inTensor(array, "NumPy dtype '" + descr + "' is not supported");
        };
        return new NpyDtype(dtype, byteOrder);
    }
}
