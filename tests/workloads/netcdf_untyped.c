/* NetCDF-4 through the untyped functions (as Python's netCDF4 calls them), which move the
 * variable's own type, then the same file opened again and read.
 *
 * Writes: nc_put_vara of v (double, 10 x 20) whole: 1600 bytes; nc_put_vars of 5 x 10 of it
 * with stride 2: 400; nc_put_var1 of one value: 8; nc_put_var of s (short, 10): 20.
 * Reads after nc_open: nc_get_vara_double of v, whose rank nobody asked yet: 1600 (the
 * H5Dread beneath; NetCDF reads the variable's attributes inside this first access); then
 * nc_get_vara of v after nc_inq_varndims and nc_inq_vartype: 1600; nc_get_var1_double of v:
 * 8; nc_get_vara and nc_get_vara_short of s, whose rank nobody asked: 20 each.
 * Usage: netcdf_untyped FILE */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x) do { int e_ = (x); if (e_ != NC_NOERR) { fprintf(stderr, "%s: %s\n", #x, nc_strerror(e_)); exit(2); } } while (0)

int main(int argc, char **argv) {
    if (argc != 2) return 1;
    static double v[10 * 20];
    static short s[10];
    int ncid, dims[2], var_v, var_s;
    CHECK(nc_create(argv[1], NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "x", 10, &dims[0]));
    CHECK(nc_def_dim(ncid, "y", 20, &dims[1]));
    CHECK(nc_def_var(ncid, "v", NC_DOUBLE, 2, dims, &var_v));
    CHECK(nc_def_var(ncid, "s", NC_SHORT, 1, dims, &var_s));
    CHECK(nc_enddef(ncid));
    size_t start[2] = {0, 0}, count[2] = {10, 20}, part[2] = {5, 10}, one[2] = {1, 1};
    ptrdiff_t stride[2] = {2, 2};
    CHECK(nc_put_vara(ncid, var_v, start, count, v));
    CHECK(nc_put_vars(ncid, var_v, start, part, stride, v));
    CHECK(nc_put_var1(ncid, var_v, one, v));
    CHECK(nc_put_var(ncid, var_s, s));
    CHECK(nc_close(ncid));

    int type, ndims;
    CHECK(nc_open(argv[1], NC_NOWRITE, &ncid));
    CHECK(nc_inq_varid(ncid, "v", &var_v));
    CHECK(nc_inq_varid(ncid, "s", &var_s));
    CHECK(nc_get_vara_double(ncid, var_v, start, count, v));
    CHECK(nc_inq_varndims(ncid, var_v, &ndims));
    CHECK(nc_inq_vartype(ncid, var_v, &type));
    CHECK(nc_get_vara(ncid, var_v, start, count, v));
    CHECK(nc_get_var1_double(ncid, var_v, one, v));
    size_t s_count[1] = {10};
    CHECK(nc_get_vara(ncid, var_s, start, s_count, s));
    CHECK(nc_get_vara_short(ncid, var_s, start, s_count, s));
    CHECK(nc_close(ncid));
    return 0;
}
