/** PyTorch torch.save checkpoints (zip and legacy) read through a pickle VM with a strict allowlist. */
module io.anamnesis.format.pth {
    requires io.anamnesis.api;
    requires org.apache.commons.compress;


    // exports and provides arrive with the implementation.
}
