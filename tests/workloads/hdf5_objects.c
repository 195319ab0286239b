/* HDF5 objects made and opened in every way the library offers besides H5Dcreate2/H5Dopen2,
 * as generic readers (NetCDF's nc_open, h5dump, h5repack) and older codes do.
 *
 * Writes FILE: group "g" (H5Gcreate1), dataset "g/d" of N ints (H5Dcreate1), its attribute
 * "a1" (one int, H5Acreate1) and "a2" (one double, H5Acreate_by_name from the file).
 * Reads it back:
 *   1. "g/d" by H5Oopen, all of it into ints (between the two, the file's id is taken again
 *      by H5Iget_file_id and given back by H5Idec_ref); "a2" by H5Aopen_by_name from the file; "a1" by
 *      H5Aopen_by_idx (name order: index 0), "a2" by H5Aopen_idx (index 1), "a1" by
 *      H5Aopen_name, each read and closed; the dataset closed by H5Oclose.
 *   2. "g" by H5Gopen1, "d" in it by H5Dopen1, read whole into its native type, whose size the
 *      program asks (H5Tget_size) as a reader sizing its buffer does.
 *   3. "g/d" by H5Oopen_by_idx (index 0 of "g") and, on HDF5 before 1.12, by its address
 *      (H5Oopen_by_addr), each read whole and closed by H5Oclose.
 * Every call is checked; any failure exits 2.
 * Usage: hdf5_objects FILE N */
#include <hdf5.h>
#include <stdlib.h>

#define OK(x) do { if ((x) < 0) exit(2); } while (0)

static hid_t must(hid_t id) {
    if (id < 0) exit(2);
    return id;
}

static void read_whole(hid_t d, hid_t type, void *buf) {
    OK(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
}

int main(int argc, char **argv) {
    if (argc != 3) return 1;
    hsize_t n = strtoull(argv[2], NULL, 10);
    int *buf = calloc(n, sizeof(int));
    for (hsize_t i = 0; i < n; i++) buf[i] = (int)i;
    int one = 7;
    double two = 2.5;

    hid_t f = must(H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    hid_t g = must(H5Gcreate1(f, "g", 0));
    hid_t space = must(H5Screate_simple(1, &n, NULL));
    hid_t d = must(H5Dcreate1(g, "d", H5T_NATIVE_INT, space, H5P_DEFAULT));
    OK(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
    hid_t scalar = must(H5Screate(H5S_SCALAR));
    hid_t a = must(H5Acreate1(d, "a1", H5T_NATIVE_INT, scalar, H5P_DEFAULT));
    OK(H5Awrite(a, H5T_NATIVE_INT, &one));
    OK(H5Aclose(a));
    a = must(H5Acreate_by_name(f, "g/d", "a2", H5T_NATIVE_DOUBLE, scalar, H5P_DEFAULT,
                               H5P_DEFAULT, H5P_DEFAULT));
    OK(H5Awrite(a, H5T_NATIVE_DOUBLE, &two));
    OK(H5Aclose(a));
    OK(H5Sclose(scalar));
    OK(H5Sclose(space));
    OK(H5Dclose(d));
    OK(H5Gclose(g));
    OK(H5Fclose(f));

    f = must(H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT));

    hid_t o = must(H5Oopen(f, "g/d", H5P_DEFAULT));
    /* The file's id again, one more reference on it (as h5py's Dataset.file takes it), given
     * back with H5Idec_ref: the file stays open, one reference left. */
    if (H5Iget_file_id(o) != f || H5Idec_ref(f) != 1) exit(2);
    read_whole(o, H5T_NATIVE_INT, buf);
    a = must(H5Aopen_by_name(f, "g/d", "a2", H5P_DEFAULT, H5P_DEFAULT));
    OK(H5Aread(a, H5T_NATIVE_DOUBLE, &two));
    OK(H5Aclose(a));
    a = must(H5Aopen_by_idx(o, ".", H5_INDEX_NAME, H5_ITER_INC, 0, H5P_DEFAULT, H5P_DEFAULT));
    OK(H5Aread(a, H5T_NATIVE_INT, &one));
    OK(H5Aclose(a));
    a = must(H5Aopen_idx(o, 1));
    OK(H5Aread(a, H5T_NATIVE_DOUBLE, &two));
    OK(H5Aclose(a));
    a = must(H5Aopen_name(o, "a1"));
    OK(H5Aread(a, H5T_NATIVE_INT, &one));
    OK(H5Aclose(a));
    OK(H5Oclose(o));

    g = must(H5Gopen1(f, "g"));
    d = must(H5Dopen1(g, "d"));
    hid_t file_type = must(H5Dget_type(d));
    hid_t native = must(H5Tget_native_type(file_type, H5T_DIR_DEFAULT));
    if (H5Tget_size(native) != sizeof(int)) exit(2);
    read_whole(d, native, buf);
    OK(H5Tclose(native));
    OK(H5Tclose(file_type));
    OK(H5Dclose(d));
    OK(H5Gclose(g));

    o = must(H5Oopen_by_idx(f, "g", H5_INDEX_NAME, H5_ITER_INC, 0, H5P_DEFAULT));
    read_whole(o, H5T_NATIVE_INT, buf);
    OK(H5Oclose(o));
#if !H5_VERSION_GE(1, 12, 0)
    H5O_info_t info;
    OK(H5Oget_info_by_name2(f, "g/d", &info, H5O_INFO_BASIC, H5P_DEFAULT));
    o = must(H5Oopen_by_addr(f, info.addr));
    read_whole(o, H5T_NATIVE_INT, buf);
    OK(H5Oclose(o));
#endif

    for (hsize_t i = 0; i < n; i++)
        if (buf[i] != (int)i) exit(2);
    if (one != 7 || two != 2.5) exit(2);
    OK(H5Fclose(f));
    free(buf);
    return 0;
}
