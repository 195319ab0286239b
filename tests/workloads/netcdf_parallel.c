/* A parallel NetCDF-4 job: every rank writes its slice of a 1-D variable collectively,
 * then its slice of a second variable independently.
 *
 * usage: mpirun -np N netcdf_parallel FILE [VALUES_PER_RANK] */
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x) do { int e_ = (x); if (e_ != NC_NOERR) { fprintf(stderr, "%s: %s\n", #x, nc_strerror(e_)); MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 2) MPI_Abort(MPI_COMM_WORLD, 1);
    size_t n = argc > 2 ? (size_t)atol(argv[2]) : 4096;
    double *buf = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) buf[i] = rank + i * 1e-6;

    int ncid, dim, coll, indep;
    CHECK(nc_create_par(argv[1], NC_NETCDF4 | NC_CLOBBER, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid));
    CHECK(nc_def_dim(ncid, "x", n * nprocs, &dim));
    CHECK(nc_def_var(ncid, "collective", NC_DOUBLE, 1, &dim, &coll));
    CHECK(nc_def_var(ncid, "independent", NC_DOUBLE, 1, &dim, &indep));
    CHECK(nc_enddef(ncid));
    size_t start = n * rank, count = n;
    CHECK(nc_var_par_access(ncid, coll, NC_COLLECTIVE));
    CHECK(nc_put_vara_double(ncid, coll, &start, &count, buf));
    CHECK(nc_var_par_access(ncid, indep, NC_INDEPENDENT));
    CHECK(nc_put_vara_double(ncid, indep, &start, &count, buf));
    CHECK(nc_close(ncid));
    free(buf);
    MPI_Finalize();
    return 0;
}
