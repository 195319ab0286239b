/* Benchmark workload: N collective writes of SIZE bytes per rank to one shared file, through
 * MPI-IO (MPI_File_write_at_all) or parallel HDF5 (H5Dwrite of a hyperslab, collective
 * transfer); or `halo`: N exchanges of SIZE bytes between pairs of ranks (MPI_Irecv,
 * MPI_Isend, MPI_Waitall), the communication that the MPI-IO layer's request probes also
 * see. Prints the slowest rank's loop time in nanoseconds on rank 0, so start-up and
 * teardown (of the job and of a tracer) are not counted.
 *
 * usage: mpirun -np R bench_mpi mpiio|hdf5|halo SIZE N DIR (R even for halo)
 * (built with -DBENCH_NO_HDF5, for an MPI without an HDF5 of its own: mpiio only) */
#ifndef BENCH_NO_HDF5
#include <hdf5.h>
#endif
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 5) MPI_Abort(MPI_COMM_WORLD, 2);
    const char *mode = argv[1];
    long size = atol(argv[2]), n = atol(argv[3]);
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_mpi.%s", argv[4], mode);
    char *buf = malloc(size);
    memset(buf, 'a' + rank, size);
    double t0 = 0, t1 = 0;
    if (!strcmp(mode, "mpiio")) {
        MPI_File fh;
        if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                          &fh))
            MPI_Abort(MPI_COMM_WORLD, 3);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (long i = 0; i < n; i++)
            MPI_File_write_at_all(fh, (MPI_Offset)(i * nprocs + rank) * size, buf, (int)size,
                                  MPI_BYTE, MPI_STATUS_IGNORE);
        t1 = MPI_Wtime();
        MPI_File_close(&fh);
    } else if (!strcmp(mode, "halo")) {
        char *in = malloc(size);
        int peer = rank ^ 1;
        if (peer >= nprocs) MPI_Abort(MPI_COMM_WORLD, 4);
        MPI_Request reqs[2];
        MPI_Status sts[2];
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (long i = 0; i < n; i++) {
            MPI_Irecv(in, (int)size, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &reqs[0]);
            MPI_Isend(buf, (int)size, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &reqs[1]);
            MPI_Waitall(2, reqs, sts);
        }
        t1 = MPI_Wtime();
        free(in);
#ifndef BENCH_NO_HDF5
    } else if (!strcmp(mode, "hdf5")) {
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
        hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        hsize_t per = (hsize_t)size / 8, total = per * nprocs * n;
        hid_t space = H5Screate_simple(1, &total, NULL);
        hid_t dset = H5Dcreate2(file, "d", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT,
                                H5P_DEFAULT);
        hid_t mem = H5Screate_simple(1, &per, NULL);
        hid_t xfer = H5Pcreate(H5P_DATASET_XFER);
        H5Pset_dxpl_mpio(xfer, H5FD_MPIO_COLLECTIVE);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (long i = 0; i < n; i++) {
            hsize_t start = ((hsize_t)i * nprocs + rank) * per;
            H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &per, NULL);
            H5Dwrite(dset, H5T_NATIVE_DOUBLE, mem, space, xfer, buf);
        }
        t1 = MPI_Wtime();
        H5Pclose(xfer);
        H5Sclose(mem);
        H5Dclose(dset);
        H5Sclose(space);
        H5Fclose(file);
        H5Pclose(fapl);
#endif
    } else {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double mine = t1 - t0, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%.0f\n", slowest * 1e9);
    free(buf);
    MPI_Finalize();
    return 0;
}
