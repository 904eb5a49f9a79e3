/**
 * A minimal JSON reader, because the api depends on nothing but the JDK: it reads the small
 * config documents a plugin is handed ({@code quantization_config} in a file's metadata,
 * {@code config.json} and its kin beside it) into plain maps and lists, with a nesting bound,
 * and no more; {@code TypedJson} encodes and decodes the typed-json/1 values a safetensors
 * header carries in its metadata. It is not a general JSON library and is kept that small on
 * purpose: it does not stream. The plugins that read configs use it too (the GGUF module's
 * Hugging Face export for {@code config.json} and {@code tokenizer.json}, the FP8 and
 * bitsandbytes recipes); the safetensors header, bitsandbytes' {@code quant_state} blobs and
 * the CLI's output go through Jackson's streaming API ({@code jackson-core}).
 */
package io.anamnesis.api.json;
