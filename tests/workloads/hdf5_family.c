/* An HDF5 file spread over member files by the family driver, 64 KiB each:
 *   H5Fcreate FILE (a name with %d) with H5Pset_fapl_family(64 KiB)
 *   H5Dcreate2 "x", N native ints; H5Dwrite of 0..N-1 (N ints, 4N bytes, contiguous)
 *   H5Dclose, H5Fclose
 * The driver opens a member as the file's addresses reach it: the first in H5Fcreate, the
 * others beneath the H5Dwrite whose data goes there.
 * usage: hdf5_family FILE N */
#include <hdf5.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 3) return 1;
    int n = atoi(argv[2]);
    int *buf = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) buf[i] = i;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (H5Pset_fapl_family(fapl, 65536, H5P_DEFAULT) < 0) return 2;
    hid_t f = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (f < 0) return 3;
    hsize_t dims[1] = {(hsize_t)n};
    hid_t s = H5Screate_simple(1, dims, NULL);
    hid_t d = H5Dcreate2(f, "x", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (d < 0 || H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) return 4;
    if (H5Dclose(d) < 0 || H5Sclose(s) < 0 || H5Fclose(f) < 0 || H5Pclose(fapl) < 0) return 5;
    free(buf);
    return 0;
}
