/* MPI-IO with known offsets and sizes, on N ranks (rank r):
 *   MPI_File_write_at      4096 B of MPI_BYTE at r*4096                 (independent)
 *   MPI_File_write_at_all  1024 MPI_DOUBLE (8192 B) at 65536 + r*8192    (collective)
 *   MPI_File_iwrite_at     1000 B at 131072 + r*1000, then MPI_Wait      (non-blocking)
 *   MPI_File_write_at      10 of a built type of 3 MPI_DOUBLE (240 B) at 196608 + r*240
 *   MPI_File_iread_at      100 B at r*4096, then MPI_Test until it is done       (polled)
 *   MPI_File_set_view      disp 262144, filetype: 4 blocks of 256 B, stride 256*N
 *   MPI_File_write_all     1024 B through that view                      (collective)
 * usage: mpirun -np N mpiio FILE (any MPI: Open MPI's or MPICH's mpicc) */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc != 2) MPI_Abort(MPI_COMM_WORLD, 1);
    char *buf = malloc(8192);
    memset(buf, 'a' + rank, 8192);

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_buffer_size", "1048576");
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh))
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Info_free(&info);

    MPI_Status st;
    MPI_File_write_at(fh, (MPI_Offset)rank * 4096, buf, 4096, MPI_BYTE, &st);
    MPI_File_write_at_all(fh, 65536 + (MPI_Offset)rank * 8192, buf, 1024, MPI_DOUBLE, &st);
    MPI_Request req;
    MPI_File_iwrite_at(fh, 131072 + (MPI_Offset)rank * 1000, buf, 1000, MPI_BYTE, &req);
    MPI_Wait(&req, &st);
    MPI_Datatype triple;
    MPI_Type_contiguous(3, MPI_DOUBLE, &triple);
    MPI_Type_commit(&triple);
    MPI_File_write_at(fh, 196608 + (MPI_Offset)rank * 240, buf, 10, triple, &st);
    MPI_Type_free(&triple);
    char back[100];
    int done = 0;
    MPI_File_iread_at(fh, (MPI_Offset)rank * 4096, back, 100, MPI_BYTE, &req);
    while (!done) MPI_Test(&req, &done, &st);
    if (memcmp(back, buf, 100)) MPI_Abort(MPI_COMM_WORLD, 3);

    MPI_Datatype strided;
    MPI_Type_vector(4, 256, 256 * n, MPI_BYTE, &strided);
    MPI_Type_commit(&strided);
    MPI_File_set_view(fh, 262144 + (MPI_Offset)rank * 256, MPI_BYTE, strided, "native", MPI_INFO_NULL);
    MPI_File_write_all(fh, buf, 1024, MPI_BYTE, &st);
    MPI_Type_free(&strided);

    MPI_File_close(&fh);
    free(buf);
    MPI_Finalize();
    return 0;
}
