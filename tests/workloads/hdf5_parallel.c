/* A small parallel HDF5 job: every rank writes its block of rows of a 2-D dataset, once
 * collectively and once independently, then collectively into a chunked dataset, and rank 0
 * reopens the file and reads "/data" whole (H5S_ALL).
 *
 * usage: mpirun -np N hdf5_parallel FILE [ROWS_PER_RANK]
 * Datasets "/data" and "/independent" are (N*ROWS_PER_RANK) x 1024 doubles, contiguous;
 * "/chunked" the same shape in chunks of ROWS_PER_RANK x 256 (4 chunks per rank's block). */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define COLS 1024

static void write_block(hid_t file, const char *name, int rank, int nprocs, hsize_t rows,
                        H5FD_mpio_xfer_t mode, hid_t dcpl, const double *buf) {
    hsize_t dims[2] = {rows * nprocs, COLS};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dset = H5Dcreate2(file, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl,
                            H5P_DEFAULT);
    hsize_t start[2] = {rows * rank, 0}, count[2] = {rows, COLS};
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t mem = H5Screate_simple(2, count, NULL);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, mode);
    if (H5Dwrite(dset, H5T_NATIVE_DOUBLE, mem, space, dxpl, buf) < 0) MPI_Abort(MPI_COMM_WORLD, 2);
    H5Pclose(dxpl);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(dset);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 2) {
        if (rank == 0) fprintf(stderr, "usage: hdf5_parallel FILE [ROWS_PER_RANK]\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    hsize_t rows = argc > 2 ? (hsize_t)atoi(argv[2]) : 16;
    double *buf = malloc(rows * COLS * sizeof(double));
    for (hsize_t i = 0; i < rows * COLS; i++) buf[i] = rank * 1e6 + (double)i;

    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    write_block(file, "/data", rank, nprocs, rows, H5FD_MPIO_COLLECTIVE, H5P_DEFAULT, buf);
    write_block(file, "/independent", rank, nprocs, rows, H5FD_MPIO_INDEPENDENT, H5P_DEFAULT,
                buf);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t chunk[2] = {rows, COLS / 4};
    H5Pset_chunk(dcpl, 2, chunk);
    write_block(file, "/chunked", rank, nprocs, rows, H5FD_MPIO_COLLECTIVE, dcpl, buf);
    H5Pclose(dcpl);
    H5Fclose(file);

    if (rank == 0) {
        hid_t f = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
        hid_t d = H5Dopen2(f, "/data", H5P_DEFAULT);
        double *all = malloc(nprocs * rows * COLS * sizeof(double));
        H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, all);
        if (all[rows * COLS] != 1e6) MPI_Abort(MPI_COMM_WORLD, 3);
        free(all);
        H5Dclose(d);
        H5Fclose(f);
    }
    H5Pclose(fapl);
    free(buf);
    MPI_Finalize();
    return 0;
}
