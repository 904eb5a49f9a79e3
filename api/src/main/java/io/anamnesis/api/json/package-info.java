/**
 * A minimal JSON reader, because the api depends on nothing but the JDK: it reads the small
 * config documents a plugin is handed ({@code quantization_config} in a file's metadata,
 * {@code config.json} and its kin beside it) into plain maps and lists, with a nesting bound,
 * and no more. It is not a general JSON library and is kept that small on purpose: it neither
 * writes nor streams. Outside the api the project reads JSON with Jackson's streaming parser
 * ({@code jackson-core}), as the safetensors header and the CLI do.
 */
package io.anamnesis.api.json;
