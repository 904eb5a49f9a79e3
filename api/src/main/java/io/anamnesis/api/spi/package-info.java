/**
 * What a plugin implements or is handed, and nothing else. A plugin is one jar that depends
 * on {@code anamnesis-api} alone and declares its implementation as a service, in its
 * {@code module-info.java} ({@code provides io.anamnesis.api.spi.Dequantizer with ...}) and,
 * for the class path, in {@code META-INF/services}; {@link io.anamnesis.api.Anamnesis#installed()}
 * finds it, and {@code amn} finds it in its {@code plugins} folder or in {@code AMN_PLUGINS}.
 *
 * <h2>The three service interfaces</h2>
 * <ul>
 *   <li>{@link io.anamnesis.api.spi.FormatReader}: recognizes a file by its first bytes
 *       ({@link io.anamnesis.api.spi.FileProbe}) and opens it as a
 *       {@link io.anamnesis.api.TensorArchive}, parsing the header alone.</li>
 *   <li>{@link io.anamnesis.api.spi.FormatWriter}: writes an
 *       {@link io.anamnesis.api.spi.OutputPlan} (every tensor's name, dtype and shape up
 *       front, each with a producer of its bytes) as one file, whole or not at all.</li>
 *   <li>{@link io.anamnesis.api.spi.Dequantizer}: claims the tensor groups of one
 *       quantization scheme ({@link io.anamnesis.api.spi.Recovery}, handed a
 *       {@link io.anamnesis.api.spi.ClaimContext}) and recovers each with a
 *       {@link io.anamnesis.api.spi.RecoveryKernel}, whose
 *       {@link io.anamnesis.api.spi.ChunkFiller} writes any range of the output.</li>
 * </ul>
 * A fourth, {@link io.anamnesis.api.spi.Quantizer}, goes the other way: it plans a whole
 * model's quantization ({@code amn forget}). A fifth, {@link io.anamnesis.api.spi.ModelExporter},
 * lays a whole model folder out anew for one format (a Hugging Face folder as the GGUF
 * llama.cpp's converter writes, {@code amn convert <folder> --to gguf}).
 *
 * <h2>A reader</h2>
 * A toy format: an 8-byte magic, a little-endian count, that many F32 values. The magic
 * decides {@code canRead}; {@code open} checks every size the file declares against the
 * file and maps nothing until {@code data} is asked for.
 * {@snippet class="io.anamnesis.api.spi.examples.RawF32Reader" region="example"}
 *
 * <h2>A writer</h2>
 * The same format written: refuse what cannot be written before writing anything, write
 * through {@link io.anamnesis.api.write.AtomicOutput} (a temporary file renamed at the end)
 * and let {@link io.anamnesis.api.write.TensorDataWriter} produce the tensor's bytes in
 * bounded memory on the requested threads.
 * {@snippet class="io.anamnesis.api.spi.examples.RawF32Writer" region="example"}
 *
 * <h2>A dequantizer</h2>
 * A toy scheme, {@code <name>.q} (I8) with a one-value {@code <name>.step} (F32), recovered
 * as {@code q * step}. {@code claim} looks at names, dtypes and shapes only; the kernel maps
 * its inputs when the writer opens it, and its filler is a pure function of the range, so
 * the output is the same bytes at any thread count.
 * {@snippet class="io.anamnesis.api.spi.examples.ScaledInt8Dequantizer" region="example"}
 *
 * <p>Helpers a plugin may use live beside this package: {@link io.anamnesis.api.write} (atomic
 * output and the parallel writer engine), {@link io.anamnesis.api.config} (the parsed
 * quantization config) and {@link io.anamnesis.api.json} (the minimal reader it is parsed
 * with), {@link io.anamnesis.api.numeric} (float conversions, byte order, packed integers,
 * the kernel switch). A worked plugin built outside this repository, a dequantizer of MLX's
 * affine quantization, is in {@code examples/mlx-affine} with its tutorial,
 * {@code docs/tutorial-plugin.md}.
 */
package io.anamnesis.api.spi;
