/**
 * Configs a plugin reads, parsed, and nothing scheme-specific: the
 * {@link io.anamnesis.api.config.QuantizationConfig} a checkpoint keeps in its metadata or in
 * the {@code config.json} beside it, with typed accessors that turn a wrong value into a
 * {@link io.anamnesis.api.MalformedFileException} naming where it came from. Which scheme a
 * config names, and a tool's own config files, are for the quant module that reads it.
 */
package io.anamnesis.api.config;
