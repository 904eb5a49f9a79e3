/**
 * PyTorch {@code torch.save} checkpoints (zip and legacy) read through a pickle VM with a strict
 * allowlist: the GLOBALs {@code torch.load(weights_only=True)} accepts, interpreted as data,
 * never run.
 *
 * <p><b>Add it for</b>: opening {@code .pth}, {@code .pt} and {@code .bin} checkpoints safely,
 * without Python; a pickle that reaches for code is refused before anything runs.
 *
 * @provides io.anamnesis.api.spi.FormatReader {@code pth} ({@code .pth}, {@code .pt}, {@code .bin}, {@code .ckpt})
 */
module io.anamnesis.format.pth {
    requires transitive io.anamnesis.api;
    requires org.apache.commons.compress;

    exports io.anamnesis.format.pth;

    provides io.anamnesis.api.spi.FormatReader with io.anamnesis.format.pth.PthReader;
}
