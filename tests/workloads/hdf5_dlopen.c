/* Loads an HDF5 library with dlopen, as Python loads the one h5py brings, waits WAIT_MS, then
 * creates FILE with H5Fcreate and closes it with H5Fclose (one call each).
 * Usage: hdf5_dlopen LIB FILE WAIT_MS */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef int64_t hid_t;
#define ACC_TRUNC 0x0002u /* H5F_ACC_TRUNC */
#define P_DEFAULT 0       /* H5P_DEFAULT */

int main(int argc, char **argv) {
    if (argc != 4) return 1;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    hid_t (*create)(const char *, unsigned, hid_t, hid_t) =
        (hid_t (*)(const char *, unsigned, hid_t, hid_t))dlsym(h, "H5Fcreate");
    int (*close)(hid_t) = (int (*)(hid_t))dlsym(h, "H5Fclose");
    if (!create || !close) return 3;
    usleep(atoi(argv[3]) * 1000);
    hid_t f = create(argv[2], ACC_TRUNC, P_DEFAULT, P_DEFAULT);
    if (f < 0) return 4;
    return close(f) < 0 ? 5 : 0;
}
