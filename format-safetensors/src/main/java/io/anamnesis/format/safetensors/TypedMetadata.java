package io.anamnesis.format.safetensors;

import io.anamnesis.api.MetaValue;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.json.TypedJson;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * Typed metadata in {@code __metadata__}, whose values the spec makes strings: the
 * {@link TypedJson} encoding ({@code typed-json/1}, {@code docs/metadata.md}).
 *
 * <p>A file whose values are all plain strings is written as it always was, with no marker.
 * A file with any other value gets the marker {@value TypedJson#MARKER_KEY} =
 * {@value TypedJson#ENCODING}; every typed value is stored under its own key as the JSON text of
 * a typed object ({@code {"type":"u32","value":15}}), and a string as itself, unless it starts
 * with <code>{</code>, which a reader would take for a typed object: such a string is stored in the
 * typed form ({@code {"type":"string","value":"{...}"}}). A reader that finds the marker
 * decodes every value that starts with <code>{</code>; a value that does not decode is an error
 * naming its key, never a string.
 *
 * @param encoding the marker's value, when the file carries one
 * @param typed    every key but the marker, with its value decoded
 * @param display  every key but the marker, typed values rendered as text
 */
record TypedMetadata(Optional<String> encoding, SequencedMap<String, MetaValue> typed, Map<String, String> display) {

    /**
     * Decodes a header's {@code __metadata__}.
     *
     * @throws io.anamnesis.api.MalformedFileException naming the key whose value does not decode
     * @throws io.anamnesis.api.LimitExceededException naming the key whose array breaks {@code limits}
     * @throws UnsupportedFeatureException when the marker names an encoding this reader does not know
     */
    static TypedMetadata decode(Map<String, String> raw, ParseLimits limits) {
        String encoding = raw.get(TypedJson.MARKER_KEY);
        SequencedMap<String, MetaValue> typed = new LinkedHashMap<>();
        if (encoding == null) {
            raw.forEach((k, v) -> typed.put(k, new MetaValue.Str(v)));
            return new TypedMetadata(Optional.empty(), Collections.unmodifiableSequencedMap(typed), raw);
        }
        if (!encoding.equals(TypedJson.ENCODING)) {
            throw new UnsupportedFeatureException("__metadata__ key '" + TypedJson.MARKER_KEY + "' names the encoding '"
                    + encoding + "'; this reader knows " + TypedJson.ENCODING);
        }
        Map<String, String> display = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : raw.entrySet()) {
            String k = e.getKey();
            if (k.equals(TypedJson.MARKER_KEY)) continue;
            String v = e.getValue();
            MetaValue value = TypedJson.needsTypedForm(v) ? TypedJson.decode(k, v, limits) : new MetaValue.Str(v);
            typed.put(k, value);
            display.put(k, value.render());
        }
        return new TypedMetadata(Optional.of(encoding), Collections.unmodifiableSequencedMap(typed),
                Collections.unmodifiableMap(display));
    }

    /**
     * The {@code __metadata__} strings of typed key/values: as they are when every value is a
     * string, else in the typed encoding with its marker first.
     *
     * @throws UnsupportedFeatureException for a string that UTF-8 cannot hold
     */
    static SequencedMap<String, String> encode(SequencedMap<String, MetaValue> values) {
        boolean typed = values.values().stream().anyMatch(v -> !(v instanceof MetaValue.Str));
        SequencedMap<String, String> out = new LinkedHashMap<>();
        if (typed) out.put(TypedJson.MARKER_KEY, TypedJson.ENCODING);
        for (Map.Entry<String, MetaValue> e : values.entrySet()) {
            // the marker is the writer's to set: a copy of it would misdescribe the values
            if (e.getKey().equals(TypedJson.MARKER_KEY)) continue;
            boolean plain = e.getValue() instanceof MetaValue.Str s && !(typed && TypedJson.needsTypedForm(s.value()));
            out.put(e.getKey(), plain ? ((MetaValue.Str) e.getValue()).value() : TypedJson.encode(e.getKey(), e.getValue()));
        }
        return out;
    }
}
