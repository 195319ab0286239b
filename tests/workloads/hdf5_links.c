/* Links and copies made inside an HDF5 file, as h5py's group.copy, `del group[name]` and
 * `group[name] = SoftLink(...)` make them, and h5copy and h5repack.
 *
 * Writes FILE: dataset "d" of N doubles (contiguous, written whole, closed), then on the
 * file: H5Ocopy of "d" to "copy" (its N doubles written again); H5Lcreate_soft of "/d" as
 * "soft"; H5Lcreate_hard of "d" as "hard"; H5Lcreate_external of "other.h5" "/x" as "ext";
 * H5Lmove of "copy" to "moved"; H5Lcopy of "moved" to "copied"; H5Ldelete of "hard"; by the
 * 1.6 API (as h5py does), H5Glink2 of "d" as "hard2", H5Gmove2 of "hard2" to "hard3",
 * H5Gunlink of "hard3"; H5Ldelete_by_idx of the first link of "." in name order ("copied").
 * Left: "d", "ext", "moved", "soft".
 * Every call is checked; any failure exits 2.
 * Usage: hdf5_links FILE N */
#include <hdf5.h>
#include <stdlib.h>

#define OK(x) do { if ((x) < 0) exit(2); } while (0)

static hid_t must(hid_t id) {
    if (id < 0) exit(2);
    return id;
}

int main(int argc, char **argv) {
    if (argc != 3) return 1;
    hsize_t n = strtoull(argv[2], NULL, 10);
    double *buf = calloc(n, sizeof(double));
    for (hsize_t i = 0; i < n; i++) buf[i] = (double)i;

    hid_t f = must(H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    hid_t space = must(H5Screate_simple(1, &n, NULL));
    hid_t d = must(H5Dcreate2(f, "d", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT,
                              H5P_DEFAULT));
    OK(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
    OK(H5Dclose(d));
    OK(H5Sclose(space));

    OK(H5Ocopy(f, "d", f, "copy", H5P_DEFAULT, H5P_DEFAULT));
    OK(H5Lcreate_soft("/d", f, "soft", H5P_DEFAULT, H5P_DEFAULT));
    OK(H5Lcreate_hard(f, "d", f, "hard", H5P_DEFAULT, H5P_DEFAULT));
    OK(H5Lcreate_external("other.h5", "/x", f, "ext", H5P_DEFAULT, H5P_DEFAULT));
    OK(H5Lmove(f, "copy", f, "moved", H5P_DEFAULT, H5P_DEFAULT));
    OK(H5Lcopy(f, "moved", f, "copied", H5P_DEFAULT, H5P_DEFAULT));
    OK(H5Ldelete(f, "hard", H5P_DEFAULT));
    OK(H5Glink2(f, "d", H5L_TYPE_HARD, f, "hard2"));
    OK(H5Gmove2(f, "hard2", f, "hard3"));
    OK(H5Gunlink(f, "hard3"));
    OK(H5Ldelete_by_idx(f, ".", H5_INDEX_NAME, H5_ITER_INC, 0, H5P_DEFAULT));
    OK(H5Fclose(f));
    free(buf);
    return 0;
}
