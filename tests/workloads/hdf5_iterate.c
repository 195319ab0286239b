/* Datasets opened from the ids HDF5 makes for an iteration's callback, as generic readers
 * (h5dump, h5ls, NetCDF's nc_open) open what they find.
 *
 * Writes FILE: group "g" with datasets "a" (N ints) and "b" (2N ints). Reads it back:
 *   1. "g" by H5Gopen2; H5Literate over it, in name order: the callback opens each dataset
 *      by H5Dopen2 from the group id it is given, reads it whole and closes it.
 *   2. H5Lvisit_by_name from the file over "/", in name order: the callback opens each
 *      dataset it meets ("g/a", "g/b") by H5Dopen2 from the id it is given, reads it whole
 *      and closes it.
 * Prints "loc ID" for each id a callback was given, so that a test can tell them from the
 * ids the program's own calls returned. Every call is checked; any failure exits 2.
 * With DELAY_MS, the program sleeps that long before its first call.
 * Usage: hdf5_iterate FILE N [DELAY_MS] */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OK(x) do { if ((x) < 0) exit(2); } while (0)

static hsize_t n;
static int *buf;

static hid_t must(hid_t id) {
    if (id < 0) exit(2);
    return id;
}

static void write_ints(hid_t g, const char *name, hsize_t count) {
    hid_t s = must(H5Screate_simple(1, &count, NULL));
    hid_t d = must(H5Dcreate2(g, name, H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT,
                              H5P_DEFAULT));
    OK(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
    OK(H5Dclose(d));
    OK(H5Sclose(s));
}

/* Opens, reads whole and closes dataset `name` from `loc`. */
static void read_from(hid_t loc, const char *name) {
    printf("loc %lld\n", (long long)loc);
    hid_t d = must(H5Dopen2(loc, name, H5P_DEFAULT));
    OK(H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
    OK(H5Dclose(d));
}

static herr_t each_link(hid_t group, const char *name, const H5L_info_t *info, void *data) {
    (void)info;
    (void)data;
    read_from(group, name);
    return 0;
}

static herr_t each_visited(hid_t group, const char *name, const H5L_info_t *info, void *data) {
    (void)info;
    (void)data;
    if (strchr(name, '/') != NULL) read_from(group, name);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) return 1;
    n = strtoull(argv[2], NULL, 10);
    if (argc == 4) {
        long ms = strtol(argv[3], NULL, 10);
        struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&t, NULL);
    }
    buf = calloc(2 * n, sizeof(int));
    for (hsize_t i = 0; i < 2 * n; i++) buf[i] = (int)i;

    hid_t f = must(H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    hid_t g = must(H5Gcreate2(f, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    write_ints(g, "a", n);
    write_ints(g, "b", 2 * n);
    OK(H5Gclose(g));
    OK(H5Fclose(f));

    f = must(H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT));
    g = must(H5Gopen2(f, "g", H5P_DEFAULT));
    OK(H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, each_link, NULL));
    OK(H5Gclose(g));
    OK(H5Lvisit_by_name(f, "/", H5_INDEX_NAME, H5_ITER_INC, each_visited, NULL, H5P_DEFAULT));
    OK(H5Fclose(f));
    free(buf);
    return 0;
}
