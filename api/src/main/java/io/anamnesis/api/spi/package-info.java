/**
 * What a plugin implements or is handed, and nothing else: a format module implements
 * {@link io.anamnesis.api.spi.FormatReader} (with its {@link io.anamnesis.api.spi.FileProbe})
 * or {@link io.anamnesis.api.spi.FormatWriter} (handed an {@link io.anamnesis.api.spi.OutputPlan}
 * and {@link io.anamnesis.api.spi.WriteOptions}); a quant module implements
 * {@link io.anamnesis.api.spi.Dequantizer} (handed a {@link io.anamnesis.api.spi.ClaimContext},
 * returning {@link io.anamnesis.api.spi.Recovery} claims whose
 * {@link io.anamnesis.api.spi.RecoveryKernel} opens {@link io.anamnesis.api.spi.ChunkFiller}s).
 * Helpers a plugin may use live beside it: {@code io.anamnesis.api.write} (atomic output and
 * the parallel writer engine), {@code io.anamnesis.api.config} (the parsed quantization
 * config) and {@code io.anamnesis.api.json} (the minimal reader it is parsed with),
 * {@code io.anamnesis.api.numeric} (float conversions, byte order, kernel choice).
 */
package io.anamnesis.api.spi;
