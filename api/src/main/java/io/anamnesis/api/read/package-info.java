/**
 * Helpers for format readers: {@link io.anamnesis.api.read.ArchiveFile}, the open file behind
 * an archive, which one interrupted thread cannot close for the others.
 */
package io.anamnesis.api.read;
