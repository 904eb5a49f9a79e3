/**
 * MLX's affine quantization, recovered: the {@code weight} (U32, packed), {@code scales} and
 * {@code biases} that {@code mlx.nn.quantize} leaves in mlx-community checkpoints, back to
 * dense floats. A plugin: put the jar in amn's {@code plugins} folder or name it in
 * {@code AMN_PLUGINS}, or put it on an application's module path beside anamnesis.
 *
 * @provides io.anamnesis.api.spi.Dequantizer {@code mlx}: affine, 2, 3, 4, 5, 6 and 8 bits, groups of 32, 64 and 128
 */
module org.example.mlx {
    requires io.anamnesis.api;

    provides io.anamnesis.api.spi.Dequantizer with org.example.mlx.MlxAffineDequantizer;
}
