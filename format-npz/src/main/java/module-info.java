/** NumPy .npy and .npz: zero-copy for STORED members, bounded inflation for DEFLATE ones. */
module io.anamnesis.format.npz {
    requires transitive io.anamnesis.api;
    requires org.apache.commons.compress;

    exports io.anamnesis.format.npz;

    provides io.anamnesis.api.spi.FormatReader with io.anamnesis.format.npz.NpzReader;
}
