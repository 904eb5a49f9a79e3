/**
 * PyTorch torch.save checkpoints (zip and legacy) read through a pickle VM with a strict
 * allowlist: the GLOBALs torch.load(weights_only=True) accepts, interpreted as data, never run.
 */
module io.anamnesis.format.pth {
    requires transitive io.anamnesis.api;
    requires org.apache.commons.compress;

    exports io.anamnesis.format.pth;

    provides io.anamnesis.api.spi.FormatReader with io.anamnesis.format.pth.PthReader;
}
