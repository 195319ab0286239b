/* A parallel NetCDF-4 job: every rank writes its slice of a 1-D variable collectively,
 * then its slice of a second variable independently; rank 0 then writes the whole of a third
 * variable of WHOLE values (nc_put_var_double, independent).
 *
 * usage: mpirun -np N netcdf_parallel FILE [VALUES_PER_RANK] */
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>
#include <stdio.h>
#include <stdlib.h>

#define WHOLE 256

#define CHECK(x) do { int e_ = (x); if (e_ != NC_NOERR) { fprintf(stderr, "%s: %s\n", #x, nc_strerror(e_)); MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 2) MPI_Abort(MPI_COMM_WORLD, 1);
    size_t n = argc > 2 ? (size_t)atol(argv[2]) : 4096;
    size_t len = n > WHOLE ? n : WHOLE;
    double *buf = malloc(len * sizeof(double));
    for (size_t i = 0; i < len; i++) buf[i] = rank + i * 1e-6;

    int ncid, dim, dim_whole, coll, indep, whole;
    CHECK(nc_create_par(argv[1], NC_NETCDF4 | NC_CLOBBER, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid));
    CHECK(nc_def_dim(ncid, "x", n * nprocs, &dim));
    CHECK(nc_def_var(ncid, "collective", NC_DOUBLE, 1, &dim, &coll));
    CHECK(nc_def_var(ncid, "independent", NC_DOUBLE, 1, &dim, &indep));
    CHECK(nc_def_dim(ncid, "y", WHOLE, &dim_whole));
    CHECK(nc_def_var(ncid, "whole", NC_DOUBLE, 1, &dim_whole, &whole));
    CHECK(nc_enddef(ncid));
    size_t start = n * rank, count = n;
    CHECK(nc_var_par_access(ncid, coll, NC_COLLECTIVE));
    CHECK(nc_put_vara_double(ncid, coll, &start, &count, buf));
    CHECK(nc_var_par_access(ncid, indep, NC_INDEPENDENT));
    CHECK(nc_put_vara_double(ncid, indep, &start, &count, buf));
    if (rank == 0) CHECK(nc_put_var_double(ncid, whole, buf));
    CHECK(nc_close(ncid));
    free(buf);
    MPI_Finalize();
    return 0;
}
