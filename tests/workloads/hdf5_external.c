/* Datasets reached through an HDF5 external link, as NeXus files and multi-file collections
 * at light sources and climate centres use them:
 *   TARGET (target.h5 beside FILE) made with dataset "x" of N ints, not written; closed
 *   FILE made with external link "ext" to target.h5:/x
 *   H5Dopen2 of "ext" (HDF5 opens TARGET beneath it), N ints (0..N-1) written, closed
 *   H5Oopen of "ext" (TARGET opened again), N ints read back and checked, closed
 * Every call is checked; any failure exits 2.
 * Usage: hdf5_external FILE N */
#include <hdf5.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OK(x) do { if ((x) < 0) exit(2); } while (0)

static hid_t must(hid_t id) {
    if (id < 0) exit(2);
    return id;
}

int main(int argc, char **argv) {
    if (argc != 3) return 1;
    hsize_t n = strtoull(argv[2], NULL, 10);
    int *buf = calloc(n, sizeof(int)), *back = calloc(n, sizeof(int));
    for (hsize_t i = 0; i < n; i++) buf[i] = (int)i;
    char dir[4096], target[4200];
    snprintf(dir, sizeof dir, "%s", argv[1]);
    snprintf(target, sizeof target, "%s/target.h5", dirname(dir));

    hid_t t = must(H5Fcreate(target, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    hid_t space = must(H5Screate_simple(1, &n, NULL));
    OK(H5Dclose(must(H5Dcreate2(t, "x", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT,
                                H5P_DEFAULT))));
    OK(H5Sclose(space));
    OK(H5Fclose(t));

    hid_t f = must(H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    OK(H5Lcreate_external("target.h5", "/x", f, "ext", H5P_DEFAULT, H5P_DEFAULT));
    hid_t d = must(H5Dopen2(f, "ext", H5P_DEFAULT));
    OK(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
    OK(H5Dclose(d));
    hid_t o = must(H5Oopen(f, "ext", H5P_DEFAULT));
    OK(H5Dread(o, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back));
    OK(H5Oclose(o));
    OK(H5Fclose(f));
    if (memcmp(buf, back, n * sizeof(int))) exit(2);
    free(buf);
    free(back);
    return 0;
}
