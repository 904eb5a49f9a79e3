/**
 * The machinery every {@link io.anamnesis.api.spi.FormatWriter} writes with, so that no
 * writer has to get it right again: {@link io.anamnesis.api.write.AtomicOutput} (a temporary
 * file beside the target, renamed into place only when complete) and
 * {@link io.anamnesis.api.write.TensorDataWriter} (fills the pre-laid-out data regions from
 * the plan's producers, in parallel, in bounded memory, with the same bytes at any thread
 * count). A writer lays out its header, then hands the regions to these two.
 */
package io.anamnesis.api.write;
