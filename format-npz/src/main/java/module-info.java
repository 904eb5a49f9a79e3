/** NumPy .npy and .npz: reader (zero-copy for STORED members) and writer. */
module io.anamnesis.format.npz {
    requires io.anamnesis.api;
    requires org.apache.commons.compress;


    // exports and provides arrive with the implementation.
}
