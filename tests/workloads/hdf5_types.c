/* HDF5 transfers of datatypes the program builds, each written whole with one H5Dwrite: N
 * records of a compound (struct rec: 16 bytes on x86-64), N fixed-length strings of 32 bytes
 * (a copy of H5T_C_S1 resized), N arrays of three ints (12 bytes), N doubles in the native
 * type of a little-endian IEEE double (8 bytes; NetCDF 4.9 moves its data so).
 * Usage: hdf5_types FILE N */
#include <hdf5.h>
#include <stdlib.h>

struct rec {
    double x;
    int id;
};

static void put(hid_t f, const char *name, hid_t type, hsize_t n, const void *buf) {
    hid_t space = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (d < 0 || H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) exit(2);
    H5Dclose(d);
    H5Sclose(space);
}

int main(int argc, char **argv) {
    if (argc != 3) return 1;
    hsize_t n = strtoull(argv[2], NULL, 10);
    hid_t f = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) return 2;

    hid_t rec = H5Tcreate(H5T_COMPOUND, sizeof(struct rec));
    H5Tinsert(rec, "x", HOFFSET(struct rec, x), H5T_NATIVE_DOUBLE);
    H5Tinsert(rec, "id", HOFFSET(struct rec, id), H5T_NATIVE_INT);
    put(f, "records", rec, n, calloc(n, sizeof(struct rec)));

    hid_t name = H5Tcopy(H5T_C_S1);
    H5Tset_size(name, 32);
    put(f, "names", name, n, calloc(n, 32));

    hsize_t three = 3;
    hid_t triple = H5Tarray_create2(H5T_NATIVE_INT, 1, &three);
    put(f, "triples", triple, n, calloc(n * 3, sizeof(int)));

    hid_t native = H5Tget_native_type(H5T_IEEE_F64LE, H5T_DIR_DEFAULT);
    put(f, "natives", native, n, calloc(n, sizeof(double)));

    H5Tclose(native);
    H5Tclose(rec);
    H5Tclose(name);
    H5Tclose(triple);
    return H5Fclose(f) < 0 ? 2 : 0;
}
