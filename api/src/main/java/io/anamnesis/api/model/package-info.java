/**
 * Models as people download them: a folder of shards with an index
 * ({@code model.safetensors.index.json}), a set of {@code -0000N-of-0000M} files, GGUF splits.
 * {@link io.anamnesis.api.model.ModelLocator} finds a model's files (no tensor file is
 * opened), {@link io.anamnesis.api.model.ShardedArchive} shows them as one
 * {@link io.anamnesis.api.TensorArchive}, and {@link io.anamnesis.api.model.ModelFolderWriter}
 * writes a model folder as transformers does. What is format-specific (a format's split keys,
 * its own split layout) comes from the format modules through
 * {@link io.anamnesis.api.spi.FormatReader#shardPosition} and
 * {@link io.anamnesis.api.spi.FormatWriter#writeSplits}.
 */
package io.anamnesis.api.model;
