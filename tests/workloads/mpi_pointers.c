/* MPI-IO calls on the individual and the shared file pointer. Each rank r of N, on FILE:
 *   default view (etype MPI_BYTE): seek to r*1000; write 100 and 200 bytes; write_all 50;
 *     seek 40 back (SEEK_CUR); read 40; iwrite 60 (then wait)
 *   the shared pointer: seek_shared to 10000; write_ordered 64 bytes; rank 0 write_shared 32;
 *     seek_shared to 10000 again, and rank 0 read_shared 16 (the ordered write's first bytes)
 *     (barriers around them, so that no rank moves the shared pointer while another reads it);
 *     then write 20 bytes on the individual pointer, which they did not move; read_all_begin
 *     and _end 30 bytes (after the shared pointer's calls: before them, Open MPI 4.1 hangs
 *     in them, traced or not)
 *   view at 20000 + r*32, etype MPI_DOUBLE, 4 doubles of every N*4 the rank's: write_all 8
 *     and 4 doubles; seek 2 further; read_all 4; write 2
 *   view at 40000, etype 3 MPI_INTs (12 bytes, a built type): write 2 etypes, then 1;
 *     seek_shared to etype 5, and rank 0 write_shared 1 etype there (byte 40060)
 *   seek to the end (SEEK_END), write 12 bytes of MPI_BYTE (one etype of 12 bytes); once all
 *     ranks have, seek to the end again and read 12 bytes there: none
 * Before each call on the individual pointer it prints "R FUNCTION POSITION" with the position
 * MPI_File_get_position gives, in etypes of the view, as the call's offset should be (and
 * after each MPI_File_set_view, the 0 it leaves); after each blocking read "R bytes FUNCTION
 * COUNT" with the bytes its status counts (the last read moves none; under Open MPI the last
 * rank's first read may find the collective write's data not written yet, and none). Before
 * each call on the shared pointer, "R shared FUNCTION OFFSET VIEW" with the offset it will use:
 * for write_shared and read_shared the position MPI_File_get_position_shared gives, for
 * write_ordered that position plus the 64 bytes of each lower rank (the standard orders them
 * by rank), and for seek_shared the etype it seeks to; VIEW is "default" or "built".
 * usage: mpi_pointers FILE */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int rank;
static MPI_File fh;

/* The individual pointer's position before call `f`. */
static void at(const char *f) {
    MPI_Offset pos;
    MPI_File_get_position(fh, &pos);
    printf("%d %s %lld\n", rank, f, (long long)pos);
    fflush(stdout);
}

/* The view the shared pointer's calls are made in: the default, then one of a built type. */
static const char *view = "default";

/* The offset call `f` on the shared pointer will use: `before` etypes past its position. */
static void at_shared(const char *f, MPI_Offset before) {
    MPI_Offset pos;
    MPI_File_get_position_shared(fh, &pos);
    printf("%d shared %s %lld %s\n", rank, f, (long long)(pos + before), view);
    fflush(stdout);
}

/* MPI_File_seek_shared to etype `to` of the view, printed as the offset its row has. */
static void seek_shared(MPI_Offset to) {
    printf("%d shared MPI_File_seek_shared %lld %s\n", rank, (long long)to, view);
    fflush(stdout);
    MPI_File_seek_shared(fh, to, MPI_SEEK_SET);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The bytes read call `f` moved, as its status counts them. */
static void got(const char *f, MPI_Status *st) {
    int count;
    MPI_Get_count(st, MPI_BYTE, &count);
    printf("%d bytes %s %d\n", rank, f, count);
    fflush(stdout);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc != 2) MPI_Abort(MPI_COMM_WORLD, 1);
    int n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char buf[1024];
    memset(buf, 'a' + rank, sizeof buf);
    MPI_Status st;
    MPI_Request req;
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                      &fh))
        MPI_Abort(MPI_COMM_WORLD, 2);

    MPI_File_seek(fh, (MPI_Offset)rank * 1000, MPI_SEEK_SET);
    at("MPI_File_write");
    MPI_File_write(fh, buf, 100, MPI_BYTE, &st);
    at("MPI_File_write");
    MPI_File_write(fh, buf, 200, MPI_BYTE, &st);
    at("MPI_File_write_all");
    MPI_File_write_all(fh, buf, 50, MPI_BYTE, &st);
    MPI_File_seek(fh, -40, MPI_SEEK_CUR);
    at("MPI_File_read");
    MPI_File_read(fh, buf, 40, MPI_BYTE, &st);
    got("MPI_File_read", &st);
    at("MPI_File_iwrite");
    MPI_File_iwrite(fh, buf, 60, MPI_BYTE, &req);
    MPI_Wait(&req, &st);

    MPI_Barrier(MPI_COMM_WORLD);
    seek_shared(10000);
    at_shared("MPI_File_write_ordered", (MPI_Offset)rank * 64);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_write_ordered(fh, buf, 64, MPI_BYTE, &st);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        at_shared("MPI_File_write_shared", 0);
        MPI_File_write_shared(fh, buf, 32, MPI_BYTE, &st);
    }
    seek_shared(10000);
    if (rank == 0) {
        at_shared("MPI_File_read_shared", 0);
        MPI_File_read_shared(fh, buf, 16, MPI_BYTE, &st);
        got("MPI_File_read_shared", &st);
    }
    at("MPI_File_write");
    MPI_File_write(fh, buf, 20, MPI_BYTE, &st);
    at("MPI_File_read_all_begin");
    MPI_File_read_all_begin(fh, buf, 30, MPI_BYTE);
    MPI_File_read_all_end(fh, buf, &st);

    MPI_Datatype block, strided;
    MPI_Type_contiguous(4, MPI_DOUBLE, &block);
    MPI_Type_create_resized(block, 0, (MPI_Aint)n * 4 * sizeof(double), &strided);
    MPI_Type_commit(&strided);
    MPI_File_set_view(fh, 20000 + (MPI_Offset)rank * 32, MPI_DOUBLE, strided, "native",
                      MPI_INFO_NULL);
    at("MPI_File_set_view");
    double d[8] = {0};
    at("MPI_File_write_all");
    MPI_File_write_all(fh, d, 8, MPI_DOUBLE, &st);
    at("MPI_File_write_all");
    MPI_File_write_all(fh, d, 4, MPI_DOUBLE, &st);
    MPI_File_seek(fh, 2, MPI_SEEK_CUR);
    at("MPI_File_read_all");
    MPI_File_read_all(fh, d, 4, MPI_DOUBLE, &st);
    got("MPI_File_read_all", &st);
    at("MPI_File_write");
    MPI_File_write(fh, d, 2, MPI_DOUBLE, &st);

    MPI_Datatype three;
    MPI_Type_contiguous(3, MPI_INT, &three);
    MPI_Type_commit(&three);
    MPI_File_set_view(fh, 40000, three, three, "native", MPI_INFO_NULL);
    view = "built";
    at("MPI_File_set_view");
    int ints[9] = {0};
    at("MPI_File_write");
    MPI_File_write(fh, ints, 2, three, &st);
    at("MPI_File_write");
    MPI_File_write(fh, ints, 1, three, &st);
    seek_shared(5);
    if (rank == 0) {
        at_shared("MPI_File_write_shared", 0);
        MPI_File_write_shared(fh, ints, 1, three, &st);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_seek(fh, 0, MPI_SEEK_END);
    MPI_File_write(fh, buf, 12, MPI_BYTE, &st);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_seek(fh, 0, MPI_SEEK_END);
    MPI_File_read(fh, buf, 12, MPI_BYTE, &st);
    got("MPI_File_read", &st);

    MPI_File_close(&fh);
    MPI_Type_free(&strided);
    MPI_Type_free(&block);
    MPI_Type_free(&three);
    MPI_Finalize();
    return 0;
}
