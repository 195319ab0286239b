/* Non-blocking MPI-IO requests completed several at a time, on N ranks (rank r), in FILE:
 *   MPI_File_iwrite_at x3   100 B each at r*1000 + 0, 100, 200; then one MPI_Waitall
 *   MPI_File_iread_at x2    100 B each at r*1000 + 0, 100; then MPI_Waitany twice
 *   MPI_File_iwrite_at      100 B at r*1000 + 300; then MPI_Testall until its flag is set
 *   MPI_File_iwrite_at x2   100 B each at r*1000 + 400, 500; then MPI_Testany until both
 *                           are done
 *   MPI_File_iwrite_at x3   100 B each at r*1000 + 600, 700, 800; then MPI_Waitsome until
 *                           all are done
 *   MPI_File_iwrite_at x3   30 B each at r*1000 + 900, 930, 960; then MPI_Testsome until
 *                           all are done
 *   MPI_File_iwrite_at x200 4 B each at 10000 + r*1000 + 4*i; then one MPI_Waitall
 *   MPI_File_iwrite_at x150 4 B each at 20000 + r*1000 + 4*i; then MPI_Waitsome until all
 *                           are done
 * The Waitsome and Testsome calls pass an array one longer than their requests whose first is
 * MPI_REQUEST_NULL (inactive), so that the requests' indices are 1 to n. Which they complete
 * at each call is up to the MPI: every call that completed any writes its name and their
 * indices to FILE.some.r, a line each ("MPI_Waitsome 1 3"); the many-request call's lines
 * start "MPI_Waitsome150".
 * usage: mpirun -np N mpi_requests FILE (any MPI: Open MPI's or MPICH's mpicc) */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define MANY 200
#define SOME_MANY 150

/* Starts `count` (at most SOME_MANY) iwrites of `len` bytes from `at` into slots 1 to count
 * of an array whose slot 0 is inactive, then completes them with `some`, logging each call
 * that completed any to `log`. */
static void some_of(int count, MPI_File fh, MPI_Offset at, int len, char *buf,
                    const char *name,
                    int (*some)(int, MPI_Request *, int *, int *, MPI_Status *), FILE *log) {
    MPI_Request reqs[SOME_MANY + 1] = {MPI_REQUEST_NULL};
    static MPI_Status sts[SOME_MANY + 1];
    for (int i = 0; i < count; i++)
        MPI_File_iwrite_at(fh, at + i * len, buf + i * len, len, MPI_BYTE, &reqs[i + 1]);
    for (int left = count; left > 0;) {
        int n, idx[SOME_MANY + 1];
        if (some(count + 1, reqs, &n, idx, sts) || n == MPI_UNDEFINED)
            MPI_Abort(MPI_COMM_WORLD, 9);
        if (n == 0) continue;
        fprintf(log, "%s", name);
        for (int k = 0; k < n; k++) fprintf(log, " %d", idx[k]);
        fprintf(log, "\n");
        left -= n;
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 2) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh))
        MPI_Abort(MPI_COMM_WORLD, 2);
    char buf[MANY * 4], back[200];
    memset(buf, 'a' + rank, sizeof buf);
    MPI_Offset base = (MPI_Offset)rank * 1000;
    MPI_Request reqs[3];
    MPI_Status sts[3];

    for (int i = 0; i < 3; i++)
        MPI_File_iwrite_at(fh, base + i * 100, buf + i * 100, 100, MPI_BYTE, &reqs[i]);
    if (MPI_Waitall(3, reqs, sts)) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int i = 0; i < 3; i++)
        if (reqs[i] != MPI_REQUEST_NULL) MPI_Abort(MPI_COMM_WORLD, 4);

    for (int i = 0; i < 2; i++)
        MPI_File_iread_at(fh, base + i * 100, back + i * 100, 100, MPI_BYTE, &reqs[i]);
    for (int k = 0; k < 2; k++) {
        int index;
        MPI_Status st;
        if (MPI_Waitany(2, reqs, &index, &st) || index == MPI_UNDEFINED)
            MPI_Abort(MPI_COMM_WORLD, 5);
    }
    if (memcmp(back, buf, 200)) MPI_Abort(MPI_COMM_WORLD, 6);

    MPI_File_iwrite_at(fh, base + 300, buf + 300, 100, MPI_BYTE, &reqs[0]);
    int flag = 0;
    while (!flag)
        if (MPI_Testall(1, reqs, &flag, sts)) MPI_Abort(MPI_COMM_WORLD, 7);

    for (int i = 0; i < 2; i++)
        MPI_File_iwrite_at(fh, base + 400 + i * 100, buf + 400 + i * 100, 100, MPI_BYTE, &reqs[i]);
    for (int left = 2; left > 0;) {
        int index;
        if (MPI_Testany(2, reqs, &index, &flag, sts)) MPI_Abort(MPI_COMM_WORLD, 8);
        if (flag && index != MPI_UNDEFINED) left--;
    }

    char path[4200];
    snprintf(path, sizeof path, "%s.some.%d", argv[1], rank);
    FILE *log = fopen(path, "w");
    if (!log) MPI_Abort(MPI_COMM_WORLD, 10);
    some_of(3, fh, base + 600, 100, buf, "MPI_Waitsome", MPI_Waitsome, log);
    some_of(3, fh, base + 900, 30, buf, "MPI_Testsome", MPI_Testsome, log);

    /* More requests than one record of the kernel side holds (512 bytes: 64 pointers, 128
     * ints). */
    MPI_Request many[MANY];
    static MPI_Status many_sts[MANY];
    for (int i = 0; i < MANY; i++)
        MPI_File_iwrite_at(fh, 10000 + base + 4 * i, buf + 4 * i, 4, MPI_BYTE, &many[i]);
    if (MPI_Waitall(MANY, many, many_sts)) MPI_Abort(MPI_COMM_WORLD, 12);
    some_of(SOME_MANY, fh, 20000 + base, 4, buf, "MPI_Waitsome150", MPI_Waitsome, log);
    if (fclose(log)) MPI_Abort(MPI_COMM_WORLD, 11);

    MPI_File_close(&fh);
    MPI_Finalize();
    return 0;
}
