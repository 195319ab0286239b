/* MPI 4.0's large-count MPI-IO calls, whose counts are MPI_Counts (MPICH 4, Open MPI 5; IOR
 * calls them where the MPI has them). Each rank r of N, on FILE:
 *   MPI_File_write_at_c 512 MPI_DOUBLEs (4096 bytes) at r*4096
 *   MPI_File_write_at_all_c 8192 MPI_BYTEs at N*4096 + r*8192
 *   MPI_File_iwrite_at_c 100 MPI_BYTEs at 65536 + r*100, then MPI_Wait
 *   MPI_File_seek to r*4096, MPI_File_read_c 4096 MPI_BYTEs (its own block), then
 *   MPI_File_read_all_c 1024 MPI_BYTEs (the next 1024)
 * and prints "R FUNCTION OFFSET BYTES" for each: the byte offset it used and the bytes it
 * moved (its status's count; the requested bytes for the nonblocking write).
 * usage: mpi_large_count FILE */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#if MPI_VERSION < 4
#error "the large-count calls are MPI 4.0's"
#endif

static int rank;

static void moved(const char *f, MPI_Offset at, MPI_Status *st, MPI_Count asked) {
    MPI_Count n = asked;
    if (st) MPI_Get_count_c(st, MPI_BYTE, &n);
    printf("%d %s %lld %lld\n", rank, f, (long long)at, (long long)n);
    fflush(stdout);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc != 2) MPI_Abort(MPI_COMM_WORLD, 1);
    int n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    static double d[512];
    static char buf[8192];
    memset(buf, 'a' + rank, sizeof buf);
    MPI_File fh;
    MPI_Status st;
    MPI_Request req;
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                      &fh))
        MPI_Abort(MPI_COMM_WORLD, 2);

    MPI_Offset at = (MPI_Offset)rank * 4096;
    MPI_File_write_at_c(fh, at, d, 512, MPI_DOUBLE, &st);
    moved("MPI_File_write_at_c", at, &st, 0);
    at = (MPI_Offset)n * 4096 + rank * 8192;
    MPI_File_write_at_all_c(fh, at, buf, 8192, MPI_BYTE, &st);
    moved("MPI_File_write_at_all_c", at, &st, 0);
    at = 65536 + rank * 100;
    MPI_File_iwrite_at_c(fh, at, buf, 100, MPI_BYTE, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    moved("MPI_File_iwrite_at_c", at, NULL, 100);

    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    at = (MPI_Offset)rank * 4096;
    MPI_File_seek(fh, at, MPI_SEEK_SET);
    MPI_File_read_c(fh, buf, 4096, MPI_BYTE, &st);
    moved("MPI_File_read_c", at, &st, 0);
    MPI_File_read_all_c(fh, buf, 1024, MPI_BYTE, &st);
    moved("MPI_File_read_all_c", at + 4096, &st, 0);

    MPI_File_close(&fh);
    MPI_Finalize();
    return 0;
}
