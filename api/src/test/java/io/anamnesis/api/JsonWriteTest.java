package io.anamnesis.api;

import io.anamnesis.api.json.Json;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Json.dumps against what CPython 3's json.dumps and repr print for the same values (run and copied). */
class JsonWriteTest {

    @Test
    void floatsAreSpelledAsPythonsRepr() {
        Map<Double, String> python = new LinkedHashMap<>();
        python.put(6.0, "6.0");
        python.put(1e-05, "1e-05");
        python.put(0.0001, "0.0001");
        python.put(1e16, "1e+16");
        python.put(123456789.0, "123456789.0");
        python.put(1.5e-07, "1.5e-07");
        python.put((double) 0.1f, "0.10000000149011612");
        python.put(-0.0, "-0.0");
        python.put(1e22, "1e+22");
        python.put(2.5e15, "2500000000000000.0");
        python.put(0.05052706599235535, "0.05052706599235535");
        python.put(-(double) Math.nextDown(Float.MIN_NORMAL), "-1.1754942106924411e-38");
        python.put(100.0, "100.0");
        python.put((double) Float.MAX_VALUE, "3.4028234663852886e+38");
        python.forEach((v, text) -> assertThat(Json.repr(v)).as("repr(%s)", v).isEqualTo(text));
    }

    @Test
    void objectsUsePythonsSeparatorsAndEscapes() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("a", 6.0);
        m.put("b", List.of(1, 2L));
        m.put("c", null);
        m.put("d", true);
        m.put("e", "\u00e9\"");
        m.put("f", Json.NULL);
        assertThat(Json.dumps(m)).isEqualTo("{\"a\": 6.0, \"b\": [1, 2], \"c\": null, \"d\": true, \"e\": \"\\u00e9\\\"\", \"f\": null}");
    }
}
