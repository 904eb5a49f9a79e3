/**
 * NumPy {@code .npy} and {@code .npz}: zero-copy for STORED members, bounded inflation for
 * DEFLATE ones.
 *
 * <p><b>Add it for</b>: opening arrays saved with {@code numpy.save}/{@code savez} (and
 * {@code savez_compressed}).
 *
 * @provides io.anamnesis.api.spi.FormatReader {@code npz} ({@code .npz}, {@code .npy})
 */
module io.anamnesis.format.npz {
    requires transitive io.anamnesis.api;
    requires org.apache.commons.compress;

    exports io.anamnesis.format.npz;

    provides io.anamnesis.api.spi.FormatReader with io.anamnesis.format.npz.NpzReader;
}
