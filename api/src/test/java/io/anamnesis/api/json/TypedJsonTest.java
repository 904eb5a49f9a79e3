package io.anamnesis.api.json;

import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.MetaValue.Array;
import io.anamnesis.api.MetaValue.Bool;
import io.anamnesis.api.MetaValue.Int;
import io.anamnesis.api.MetaValue.Real;
import io.anamnesis.api.MetaValue.Str;
import io.anamnesis.api.MetaValue.Type;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.UnsupportedFeatureException;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * typed-json/1 as docs/metadata.md specifies it: the texts below are the specification's
 * forms, written out by hand; decoding must give back the same type and bits.
 */
class TypedJsonTest {
    private static final ParseLimits LIMITS = ParseLimits.defaults();

    private static MetaValue roundTrip(MetaValue v) {
        return TypedJson.decode("k", TypedJson.encode("k", v), LIMITS);
    }

    private static MetaValue decode(String json) {
        return TypedJson.decode("k", json, LIMITS);
    }

    @Test
    void everyIntegerTypeAtItsBoundsAsAJsonInteger() {
        assertThat(TypedJson.encode("k", MetaValue.u32(15))).isEqualTo("{\"type\":\"u32\",\"value\":15}");
        assertThat(TypedJson.encode("k", new Int(Type.I8, -128))).isEqualTo("{\"type\":\"i8\",\"value\":-128}");
        // a u64 keeps its 64 bits and is written unsigned: 2^64 - 1
        assertThat(TypedJson.encode("k", new Int(Type.U64, -1))).isEqualTo("{\"type\":\"u64\",\"value\":18446744073709551615}");
        long[][] bounds = {{0, 255}, {-128, 127}, {0, 65535}, {-32768, 32767}, {0, 4294967295L},
                {Integer.MIN_VALUE, Integer.MAX_VALUE}, {0, -1}, {Long.MIN_VALUE, Long.MAX_VALUE}};
        Type[] types = {Type.U8, Type.I8, Type.U16, Type.I16, Type.U32, Type.I32, Type.U64, Type.I64};
        for (int i = 0; i < types.length; i++) {
            for (long v : bounds[i]) {
                assertThat(roundTrip(new Int(types[i], v))).isEqualTo(new Int(types[i], v));
            }
        }
    }

    @Test
    void float32KeepsItsBitsThroughItsShortestDecimal() {
        // 1e-5f is 0x3727C5AC; "1.0E-5" is the shortest decimal that reads back to it
        assertThat(TypedJson.encode("k", Real.f32(1e-5f))).isEqualTo("{\"type\":\"f32\",\"value\":1.0E-5}");
        assertThat(Float.floatToRawIntBits((float) ((Real) decode("{\"type\":\"f32\",\"value\":1.0E-5}")).value()))
                .isEqualTo(0x3727C5AC);
        // the Python spelling reads the same float
        assertThat(decode("{\"type\":\"f32\",\"value\":1e-05}")).isEqualTo(Real.f32(1e-5f));
        for (int bits : new int[]{0x00000001, 0x007FFFFF, 0x7F7FFFFF, 0x80000000, 0x3F800000, 0x3DCCCCCD, 0xC2F6E979}) {
            float f = Float.intBitsToFloat(bits);
            assertThat(Float.floatToRawIntBits((float) ((Real) roundTrip(Real.f32(f))).value())).as("bits %08x", bits).isEqualTo(bits);
        }
    }

    @Test
    void float64KeepsItsBits() {
        for (long bits : new long[]{1L, 0x3FB999999999999AL, 0x7FEFFFFFFFFFFFFFL, 0x8000000000000000L}) {
            double d = Double.longBitsToDouble(bits);
            assertThat(Double.doubleToRawLongBits(((Real) roundTrip(new Real(Type.F64, d))).value())).isEqualTo(bits);
        }
    }

    @Test
    void specialFloatsAreNamedStringsAndOtherNaNsKeepTheirBits() {
        assertThat(TypedJson.encode("k", Real.f32(Float.NaN))).isEqualTo("{\"type\":\"f32\",\"value\":\"nan\"}");
        assertThat(TypedJson.encode("k", new Real(Type.F64, Double.NEGATIVE_INFINITY))).isEqualTo("{\"type\":\"f64\",\"value\":\"-inf\"}");
        assertThat(roundTrip(Real.f32(Float.POSITIVE_INFINITY))).isEqualTo(Real.f32(Float.POSITIVE_INFINITY));
        float payload = Float.intBitsToFloat(0x7FC00001);
        assertThat(TypedJson.encode("k", Real.f32(payload))).isEqualTo("{\"type\":\"f32\",\"value\":\"nan:0x7fc00001\"}");
        assertThat(Float.floatToRawIntBits((float) ((Real) decode("{\"type\":\"f32\",\"value\":\"nan:0xffc00000\"}")).value()))
                .isEqualTo(0xFFC00000);
        assertThat(Double.doubleToRawLongBits(((Real) decode("{\"type\":\"f64\",\"value\":\"nan:0x7ff8000000000001\"}")).value()))
                .isEqualTo(0x7FF8000000000001L);
    }

    /**
     * A signalling f32 NaN keeps its bits through MetaValue and typed-json both ways: Java's
     * float-to-double widening sets the quiet bit (0x7f800001 came back 0x7fc00001).
     */
    @Test
    void signallingFloat32NaNsKeepEveryBit() {
        for (int bits : new int[]{0x7F800001, 0xFF800001, 0x7FBFFFFF, 0x7FC00000, 0xFFFFFFFF, 0x7F812345}) {
            Real r = Real.f32(Float.intBitsToFloat(bits));
            assertThat(Float.floatToRawIntBits(r.floatValue())).as("%08x", bits).isEqualTo(bits);
            String json = TypedJson.encode("k", r);
            assertThat(json).as("%08x", bits).isEqualTo(bits == 0x7FC00000 ? "{\"type\":\"f32\",\"value\":\"nan\"}"
                    : "{\"type\":\"f32\",\"value\":\"nan:0x" + String.format("%08x", bits) + "\"}");
            assertThat(Float.floatToRawIntBits(((Real) roundTrip(r)).floatValue())).as("%08x", bits).isEqualTo(bits);
        }
        // not NaNs: the value, as before
        assertThat(Real.f32(-0.0f).floatValue()).isEqualTo(-0.0f);
        assertThat(Float.floatToRawIntBits(Real.f32(-0.0f).floatValue())).isEqualTo(0x80000000);
        assertThat(Real.f32(Float.MIN_VALUE).value()).isEqualTo((double) Float.MIN_VALUE);
        assertThat(new Real(Type.F64, 0.1).floatValue()).isEqualTo(0.1f);
    }

    @Test
    void boolsAndStringsWithNulQuotesAndNonAscii() {
        assertThat(TypedJson.encode("k", new Bool(true))).isEqualTo("{\"type\":\"bool\",\"value\":true}");
        String s = "a\u0000b \"q\" \\ \n\t é 漢字 🦙 \u001f";
        assertThat(TypedJson.encode("k", new Str(s)))
                .isEqualTo("{\"type\":\"string\",\"value\":\"a\\u0000b \\\"q\\\" \\\\ \\n\\t é 漢字 🦙 \\u001f\"}");
        assertThat(roundTrip(new Str(s))).isEqualTo(new Str(s));
        assertThat(roundTrip(new Str(""))).isEqualTo(new Str(""));
        assertThat(decode("{\"type\":\"string\",\"value\":\"\\ud83e\\udd99\"}")).isEqualTo(new Str("🦙"));
        // "str" is read as "string", as --gguf-kv spells it
        assertThat(decode("{\"type\":\"str\",\"value\":\"x\"}")).isEqualTo(new Str("x"));
    }

    @Test
    void arraysOfEveryKindArraysOfArraysAndEmptyArrays() {
        Array tokens = new Array(Type.STRING, List.of(new Str("<unk>"), new Str("▁the")));
        assertThat(TypedJson.encode("k", tokens))
                .isEqualTo("{\"type\":\"array\",\"item_type\":\"string\",\"value\":[\"<unk>\",\"▁the\"]}");
        Array empty = new Array(Type.F32, List.of());
        assertThat(TypedJson.encode("k", empty)).isEqualTo("{\"type\":\"array\",\"item_type\":\"f32\",\"value\":[]}");
        Array nested = new Array(Type.ARRAY, List.of(
                new Array(Type.I32, List.of(MetaValue.i32(1), MetaValue.i32(-2))),
                new Array(Type.STRING, List.of(new Str("x"))),
                new Array(Type.ARRAY, List.of()),
                new Array(Type.ARRAY, List.of(new Array(Type.BOOL, List.of(new Bool(false)))))));
        assertThat(TypedJson.encode("k", nested)).isEqualTo("{\"type\":\"array\",\"item_type\":\"array\",\"value\":["
                + "{\"type\":\"array\",\"item_type\":\"i32\",\"value\":[1,-2]},"
                + "{\"type\":\"array\",\"item_type\":\"string\",\"value\":[\"x\"]},"
                + "{\"type\":\"array\",\"item_type\":\"array\",\"value\":[]},"
                + "{\"type\":\"array\",\"item_type\":\"array\",\"value\":[{\"type\":\"array\",\"item_type\":\"bool\",\"value\":[false]}]}]}");
        for (MetaValue v : List.of(tokens, empty, nested, new Array(Type.U64, List.of(new Int(Type.U64, -1))),
                new Array(Type.F64, List.of(new Real(Type.F64, Double.NaN), new Real(Type.F64, -0.0))))) {
            assertThat(roundTrip(v)).isEqualTo(v);
        }
    }

    @Test
    void membersInAnyOrderAndWhitespace() {
        assertThat(decode(" { \"value\" : [ 1 , 2 ] , \"item_type\" : \"u8\" , \"type\" : \"array\" } "))
                .isEqualTo(new Array(Type.U8, List.of(new Int(Type.U8, 1), new Int(Type.U8, 2))));
    }

    @Test
    void aMillionElementArrayWithinTheLimitAndATypedErrorPastIt() {
        List<MetaValue> values = new ArrayList<>(1_000_000);
        for (int i = 0; i < 1_000_000; i++) values.add(new Int(Type.U32, i * 7L));
        Array big = new Array(Type.U32, values);
        String json = TypedJson.encode("tokenizer.ggml.merges", big);
        assertThat(TypedJson.decode("tokenizer.ggml.merges", json, LIMITS)).isEqualTo(big);
        assertThatThrownBy(() -> TypedJson.decode("tokenizer.ggml.merges", json, LIMITS.withMaxArrayLength(999_999)))
                .isInstanceOf(LimitExceededException.class)
                .hasMessageContaining("metadata key 'tokenizer.ggml.merges'").hasMessageContaining("999999");
    }

    @Test
    void nestingPastTheLimitIsALimitError() {
        String deep = "{\"type\":\"array\",\"item_type\":\"u8\",\"value\":[]}";
        for (int i = 0; i < 5; i++) deep = "{\"type\":\"array\",\"item_type\":\"array\",\"value\":[" + deep + "]}";
        String six = deep;
        assertThat(TypedJson.decode("k", six, LIMITS.withMaxNestingDepth(6))).isInstanceOf(Array.class);
        assertThatThrownBy(() -> TypedJson.decode("k", six, LIMITS.withMaxNestingDepth(5)))
                .isInstanceOf(LimitExceededException.class).hasMessageContaining("metadata key 'k'");
        // a value nested far deeper than any limit stops at the limit, without a stack overflow
        String hostile = "{\"type\":\"u8\",\"value\":" + "[".repeat(200_000) + "]".repeat(200_000) + "}";
        assertThatThrownBy(() -> TypedJson.decode("k", hostile, LIMITS)).isInstanceOf(LimitExceededException.class);
    }

    @Test
    void malformedTextOrUnknownTypesAreMalformedErrorsNamingTheKey() {
        String[] bad = {
                "{\"type\":\"u32\",\"value\":15",                        // not closed
                "{\"type\":\"u128\",\"value\":1}",                        // unknown type
                "{\"type\":\"array\",\"item_type\":\"q4\",\"value\":[]}", // unknown item type
                "{\"value\":1}",                                          // no type
                "{\"type\":\"u32\"}",                                     // no value
                "{\"type\":\"u32\",\"value\":1,\"unit\":\"s\"}",          // unknown member
                "{\"type\":\"u32\",\"type\":\"u8\",\"value\":1}",         // member twice
                "{\"type\":\"u8\",\"value\":256}",                        // out of range
                "{\"type\":\"u64\",\"value\":-1}",
                "{\"type\":\"u64\",\"value\":18446744073709551616}",
                "{\"type\":\"i32\",\"value\":1.5}",                       // not an integer
                "{\"type\":\"u32\",\"value\":\"15\"}",                    // a string for a number
                "{\"type\":\"f32\",\"value\":1e39}",                      // past float32
                "{\"type\":\"f32\",\"value\":\"one\"}",
                "{\"type\":\"f32\",\"value\":\"nan:0x3f800000\"}",        // the bits of 1.0, not a NaN
                "{\"type\":\"f32\",\"value\":01}",                        // not JSON's number grammar
                "{\"type\":\"bool\",\"value\":1}",
                "{\"type\":\"string\",\"value\":7}",
                "{\"type\":\"string\",\"value\":\"\\ud800\"}",            // an unpaired surrogate
                "{\"type\":\"array\",\"value\":[]}",                      // no item_type
                "{\"type\":\"u8\",\"item_type\":\"u8\",\"value\":1}",
                "{\"type\":\"array\",\"item_type\":\"array\",\"value\":[[1]]}", // inner arrays are typed objects
                "{\"type\":\"array\",\"item_type\":\"u8\",\"value\":[1,]}",
                "{\"type\":\"u8\",\"value\":1} x",                        // trailing characters
                "[1]",
                "",
        };
        for (String json : bad) {
            assertThatThrownBy(() -> TypedJson.decode("llama.block_count", json, LIMITS)).as(json)
                    .isInstanceOf(MalformedFileException.class)
                    .hasMessageStartingWith("metadata key 'llama.block_count': not a typed-json/1 value");
        }
    }

    @Test
    void aStringThatUtf8CannotHoldIsRefusedWhenEncoded() {
        assertThatThrownBy(() -> TypedJson.encode("k", new Str("a\ud800b")))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("metadata key 'k'");
    }

    @Test
    void onlyStringsStartingWithABraceNeedTheTypedForm() {
        assertThat(TypedJson.needsTypedForm("{\"bits\": 4}")).isTrue();
        assertThat(TypedJson.needsTypedForm("{% for m in messages %}")).isTrue();
        assertThat(TypedJson.needsTypedForm("pt")).isFalse();
        assertThat(TypedJson.needsTypedForm(" {")).isFalse();
    }

    @Test
    void anObjectOfKeyValuesTypedOrInferred() {
        var kv = TypedJson.decodeObject("""
                {"general.architecture": "llama",
                 "llama.context_length": 4096,
                 "x.offset": -3,
                 "x.eps": 1e-5,
                 "x.flag": true,
                 "x.ids": [1, 2, 3],
                 "x.rows": [["a"], [1.5, 2]],
                 "x.big": {"type": "u64", "value": 18446744073709551615},
                 "x.empty": {"type": "array", "item_type": "i64", "value": []}}
                """, LIMITS);
        assertThat(kv).containsExactly(
                Map.entry("general.architecture", new Str("llama")),
                Map.entry("llama.context_length", MetaValue.u32(4096)),
                Map.entry("x.offset", MetaValue.i32(-3)),
                Map.entry("x.eps", Real.f32(1e-5f)),
                Map.entry("x.flag", new Bool(true)),
                Map.entry("x.ids", new Array(Type.U32, List.of(MetaValue.u32(1), MetaValue.u32(2), MetaValue.u32(3)))),
                Map.entry("x.rows", new Array(Type.ARRAY, List.of(new Array(Type.STRING, List.of(new Str("a"))),
                        new Array(Type.F32, List.of(Real.f32(1.5f), Real.f32(2f)))))),
                Map.entry("x.big", new Int(Type.U64, -1)),
                Map.entry("x.empty", new Array(Type.I64, List.of())));
    }

    @Test
    void anObjectOfKeyValuesNamesTheKeyAtFault() {
        for (String json : List.of("{\"a\": 1, \"bad.key\": null}", "{\"a\": 1, \"bad.key\": []}",
                "{\"a\": 1, \"bad.key\": [1, -1]}", "{\"a\": 1, \"bad.key\": 5000000000}",
                "{\"a\": 1, \"bad.key\": {\"type\": \"u99\", \"value\": 1}}", "{\"a\": 1, \"bad.key\": 1, \"bad.key\": 2}")) {
            assertThatThrownBy(() -> TypedJson.decodeObject(json, LIMITS)).as(json)
                    .isInstanceOf(MalformedFileException.class).hasMessageStartingWith("metadata key 'bad.key': ");
        }
        assertThatThrownBy(() -> TypedJson.decodeObject("[1]", LIMITS)).isInstanceOf(MalformedFileException.class);
    }

    @Test
    void scalarsFromCommandLineText() {
        assertThat(TypedJson.scalar(Type.U32, "4096")).isEqualTo(MetaValue.u32(4096));
        assertThat(TypedJson.scalar(Type.F32, "1e-5")).isEqualTo(Real.f32(1e-5f));
        assertThat(TypedJson.scalar(Type.F64, "-inf")).isEqualTo(new Real(Type.F64, Double.NEGATIVE_INFINITY));
        assertThat(TypedJson.scalar(Type.BOOL, "false")).isEqualTo(new Bool(false));
        assertThat(TypedJson.scalar(Type.STRING, "a=b:c")).isEqualTo(new Str("a=b:c"));
        assertThat(TypedJson.scalar(Type.U64, "18446744073709551615")).isEqualTo(new Int(Type.U64, -1));
        for (var bad : List.of(Map.entry(Type.U8, "256"), Map.entry(Type.I32, "1.0"), Map.entry(Type.BOOL, "yes"),
                Map.entry(Type.F32, "1,5"), Map.entry(Type.U64, "-1"))) {
            assertThatThrownBy(() -> TypedJson.scalar(bad.getKey(), bad.getValue())).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void renderingSummarizesLongArraysForDisplayOnly() {
        List<MetaValue> many = new ArrayList<>();
        for (int i = 0; i < 17; i++) many.add(new Str("t" + i));
        assertThat(new Array(Type.STRING, many).render()).isEqualTo("[array of 17 string]");
        assertThat(new Array(Type.STRING, many.subList(0, 2)).render()).isEqualTo("[\"t0\", \"t1\"]");
        assertThat(Real.f32(1e-5f).render()).isEqualTo("1.0E-5");
        assertThat(new Int(Type.U64, -1).render()).isEqualTo("18446744073709551615");
        assertThat(Real.f32(1e-5f).plain()).isEqualTo(1.0E-5);
    }
}
