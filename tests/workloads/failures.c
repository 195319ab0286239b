/* Library calls that fail, on every library layer, and calls whose return also means the end
 * of the input. Each prints a line "NAME ERRNO" with the errno the program itself saw right
 * after the call (for nc_open, the status it returned; for MPI_File_open, its error class
 * and then errno), in this order:
 *
 *   fopen        DIR/missing/f for reading: ENOENT from its openat
 *   fread        16 bytes from a stream on the directory DIR: EISDIR from its read(2)
 *   fread_end    16 bytes from a 2-byte file: a short count at its end, not a failure
 *   fgetc_end    then one more byte: EOF at the end, not a failure
 *   fputc        a byte to that stream, opened for reading: glibc refuses it (EBADF) without
 *                a syscall
 *   H5Fopen      DIR/missing.h5: fails, its open(2) with ENOENT
 *   H5Fclose     of a file id already closed: fails within HDF5
 *   MPI_File_open DIR/missing.dat for reading: MPI_ERR_NO_SUCH_FILE, its open(2) ENOENT
 *   nc_open      DIR/missing.nc: returns ENOENT (a system error is a positive status)
 *
 * Exits 0 when every call ended as described, 2 otherwise.
 * usage: failures DIR */
#include <errno.h>
#include <hdf5.h>
#include <mpi.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char path[4096];

static const char *in(const char *dir, const char *name) {
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

#define EXPECT(cond)                                                                       \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "line %d: %s\n", __LINE__, #cond);                             \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

int main(int argc, char **argv) {
    if (argc != 2) return 1;
    const char *dir = argv[1];
    char buf[16];
    MPI_Init(&argc, &argv);
    setvbuf(stdout, NULL, _IOLBF, 0);

    errno = 0;
    FILE *f = fopen(in(dir, "missing/f"), "r");
    printf("fopen %d\n", errno);
    EXPECT(f == NULL);

    f = fopen(dir, "r");
    EXPECT(f != NULL);
    errno = 0;
    size_t n = fread(buf, 1, sizeof buf, f);
    printf("fread %d\n", errno);
    EXPECT(n == 0 && ferror(f));
    fclose(f);

    f = fopen(in(dir, "two"), "w");
    EXPECT(f != NULL && fputs("ab", f) >= 0 && fclose(f) == 0);
    f = fopen(path, "r");
    EXPECT(f != NULL);
    errno = 0;
    n = fread(buf, 1, sizeof buf, f);
    printf("fread_end %d\n", errno);
    EXPECT(n == 2 && feof(f) && !ferror(f));
    errno = 0;
    int c = fgetc(f);
    printf("fgetc_end %d\n", errno);
    EXPECT(c == EOF && !ferror(f));
    errno = 0;
    c = fputc('x', f);
    printf("fputc %d\n", errno);
    EXPECT(c == EOF);
    fclose(f);

    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    errno = 0;
    hid_t h = H5Fopen(in(dir, "missing.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
    printf("H5Fopen %d\n", errno);
    EXPECT(h < 0);
    h = H5Fcreate(in(dir, "f.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT(h >= 0 && H5Fclose(h) >= 0);
    errno = 0;
    herr_t st = H5Fclose(h);
    printf("H5Fclose %d\n", errno);
    EXPECT(st < 0);

    MPI_File fh;
    errno = 0;
    int err = MPI_File_open(MPI_COMM_SELF, in(dir, "missing.dat"), MPI_MODE_RDONLY,
                            MPI_INFO_NULL, &fh);
    int saved = errno, class = 0;
    MPI_Error_class(err, &class);
    printf("MPI_File_open %d %d\n", class, saved);
    EXPECT(err != MPI_SUCCESS);

    int ncid;
    errno = 0;
    int status = nc_open(in(dir, "missing.nc"), NC_NOWRITE, &ncid);
    printf("nc_open %d\n", status);
    EXPECT(status == ENOENT);

    MPI_Finalize();
    return 0;
}
