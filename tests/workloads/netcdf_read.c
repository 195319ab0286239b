/* A NetCDF-4 file read back as post-processing tools read one: FILE gets a coordinate
 * variable "x" (N doubles, a dimension scale in HDF5) and a variable "v" of N doubles over it,
 * both written whole; after nc_close, nc_open finds them again (NetCDF iterates the file's
 * HDF5 group and opens each dataset by H5Oopen, keeping it open with H5Iinc_ref) and the
 * program reads the first half of "v", then all of "x". Any failure exits 2.
 * Usage: netcdf_read FILE N */
#include <netcdf.h>
#include <stdlib.h>

#define CHECK(x) do { if ((x) != NC_NOERR) exit(2); } while (0)

int main(int argc, char **argv) {
    if (argc != 3) return 1;
    size_t n = strtoul(argv[2], NULL, 10);
    double *buf = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) buf[i] = (double)i;

    int ncid, dim, x, v;
    CHECK(nc_create(argv[1], NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "x", n, &dim));
    CHECK(nc_def_var(ncid, "x", NC_DOUBLE, 1, &dim, &x));
    CHECK(nc_def_var(ncid, "v", NC_DOUBLE, 1, &dim, &v));
    CHECK(nc_enddef(ncid));
    CHECK(nc_put_var_double(ncid, x, buf));
    CHECK(nc_put_var_double(ncid, v, buf));
    CHECK(nc_close(ncid));

    CHECK(nc_open(argv[1], NC_NOWRITE, &ncid));
    CHECK(nc_inq_varid(ncid, "v", &v));
    CHECK(nc_inq_varid(ncid, "x", &x));
    size_t start = 0, count = n / 2;
    CHECK(nc_get_vara_double(ncid, v, &start, &count, buf));
    count = n;
    CHECK(nc_get_vara_double(ncid, x, &start, &count, buf));
    for (size_t i = 0; i < n; i++)
        if (buf[i] != (double)i) exit(2);
    CHECK(nc_close(ncid));
    free(buf);
    return 0;
}
