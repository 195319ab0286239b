/* Workloads with and without the I/O patterns `strata report` detects, in pairs that move the
 * same bytes to the same file.
 *
 * usage: mpirun -np N patterns MODE FILE
 *   small   each rank writes its 256 KiB region in 1024 pwrites of 256 B
 *   small_uring  the same 1024 writes of 256 B as io_uring requests (IORING_OP_WRITE), 32 per
 *           io_uring_enter
 *   large   each rank writes its 256 KiB region in one pwrite
 *   single  rank 0 gathers every rank's 1 MiB and writes them all (1 MiB pwrites)
 *   spread  each rank writes its own 1 MiB with one pwrite
 *   shifted as spread, each 1 MiB half a MiB further (across 1 MiB stripe boundaries)
 *   reopen  each rank opens the file, writes 1 KiB and closes it, 100 times
 *   restat  each rank stats the file by its path 100 times (stat(2)), writing 1 KiB after
 *           every tenth
 *   rexattr each rank asks the file for an extended attribute it lacks by its path 100 times
 *           (getxattr(2), as ranks probing a Lustre layout each would; ENODATA), writing 1 KiB
 *           after every tenth
 *   relist  each rank opens the file's directory and lists it 100 times (lseek to 0 and one
 *           getdents64, as a rank polling for a file would), writing 1 KiB after every tenth
 *   lines   each rank writes 512 KiB (at rank x 512 KiB) as text through a stream (fopen "r+",
 *           fseek, fputs), in lines of 256 B, whose length strata reads
 *   long_lines  the same in lines of 16 KiB, too long for strata to read their length
 *   once    each rank opens the file once and writes the same 100 KiB in 100 pwrites
 *   mpi_small  BT-IO "simple": each rank writes its 1000 records of 640 B, interleaved with
 *              the other ranks' (record i of rank r at (i * N + r) * 640), one independent
 *              MPI_File_write_at each
 *   mpi_coll   BT-IO "full": the same records through a strided file view in one collective
 *              MPI_File_write_all of 640,000 B per rank
 *   dir_shared each rank makes and removes its own entries in the file's directory: 30 files
 *              of 100 B (3 by creat, 27 by open with O_CREAT | O_EXCL), 5 of them renamed, 5
 *              directories made and removed, then a chdir into the directory and the 30
 *              files unlinked by relative names (the renamed 5 by absolute ones)
 *   dir_own    the same entries, each rank's in a directory of its own beside the file
 *              (FILE.d<rank>, made first and removed last)
 *   subdirs_shared  each rank makes and removes 30 directories in the file's directory (as an
 *              MPI runtime's session directory has one per rank) */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "ring.h"

#define REGION (256 * 1024)
#define SMALL 256
#define BLOCK (1024 * 1024)
#define RECORD 640
#define RECORDS 1000

static void check(int ok, const char *what) {
    if (!ok) {
        perror(what);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static void small_written(void *ctx, unsigned long long user_data, int res) {
    (void)ctx;
    (void)user_data;
    check(res == SMALL, "an io_uring write");
}

/* dir_shared's and dir_own's entries of one rank in DIR (see the usage above). */
static void entries(const char *dir, int rank) {
    char p[4096], q[4096];
    for (int i = 0; i < 30; i++) {
        snprintf(p, sizeof p, "%s/e.%d.%d", dir, rank, i);
        int f = i % 10 == 0 ? creat(p, 0644) : open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
        check(f >= 0, "create");
        check(write(f, p, 100) == 100, "write");
        check(close(f) == 0, "close");
    }
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/e.%d.%d", dir, rank, i);
        snprintf(q, sizeof q, "%s/r.%d.%d", dir, rank, i);
        check(rename(p, q) == 0, "rename");
        snprintf(p, sizeof p, "%s/d.%d.%d", dir, rank, i);
        check(mkdir(p, 0755) == 0, "mkdir");
        check(rmdir(p) == 0, "rmdir");
    }
    for (int i = 0; i < 5; i++) {
        snprintf(q, sizeof q, "%s/r.%d.%d", dir, rank, i);
        check(unlink(q) == 0, "unlink");
    }
    check(chdir(dir) == 0, "chdir");
    for (int i = 5; i < 30; i++) {
        snprintf(p, sizeof p, "e.%d.%d", rank, i);
        check(unlink(p) == 0, "unlink");
    }
    check(chdir("/") == 0, "chdir");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 3) {
        if (rank == 0) fprintf(stderr, "usage: patterns small|large|single|spread FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const char *mode = argv[1], *path = argv[2];
    if (rank == 0) close(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    MPI_Barrier(MPI_COMM_WORLD);
    int fd = open(path, O_WRONLY);
    check(fd >= 0, "open");
    char *buf = malloc((size_t)BLOCK * nprocs);
    memset(buf, 'a' + rank, (size_t)BLOCK * nprocs);
    if (!strcmp(mode, "small")) {
        for (long off = 0; off < REGION; off += SMALL)
            check(pwrite(fd, buf, SMALL, (off_t)rank * REGION + off) == SMALL, "pwrite");
    } else if (!strcmp(mode, "small_uring")) {
        enum { batch = 32 };
        struct ring r;
        memset(&r, 0, sizeof r);
        check(ring_setup(&r, batch) == 0, "io_uring_setup");
        for (long off = 0; off < REGION; off += batch * SMALL) {
            for (unsigned k = 0; k < batch; k++)
                ring_queue(&r, k, IORING_OP_WRITE, fd, buf, SMALL,
                           (long long)rank * REGION + off + k * SMALL, 0);
            check(ring_enter(&r, batch) == batch, "io_uring_enter");
            check(ring_reap(&r, small_written, NULL) == batch, "the completions");
        }
        close(r.fd);
    } else if (!strcmp(mode, "large")) {
        check(pwrite(fd, buf, REGION, (off_t)rank * REGION) == REGION, "pwrite");
    } else if (!strcmp(mode, "single")) {
        char *all = rank == 0 ? malloc((size_t)BLOCK * nprocs) : NULL;
        MPI_Gather(buf, BLOCK, MPI_CHAR, all, BLOCK, MPI_CHAR, 0, MPI_COMM_WORLD);
        if (rank == 0)
            for (int r = 0; r < nprocs; r++)
                check(pwrite(fd, all + (size_t)r * BLOCK, BLOCK, (off_t)r * BLOCK) == BLOCK,
                      "pwrite");
        free(all);
    } else if (!strcmp(mode, "spread")) {
        check(pwrite(fd, buf, BLOCK, (off_t)rank * BLOCK) == BLOCK, "pwrite");
    } else if (!strcmp(mode, "shifted")) {
        check(pwrite(fd, buf, BLOCK, (off_t)rank * BLOCK + BLOCK / 2) == BLOCK, "pwrite");
    } else if (!strcmp(mode, "reopen")) {
        for (int i = 0; i < 100; i++) {
            int f = open(path, O_WRONLY);
            check(f >= 0, "open");
            check(pwrite(f, buf, 1024, ((off_t)rank * 100 + i) * 1024) == 1024, "pwrite");
            close(f);
        }
    } else if (!strcmp(mode, "restat")) {
        for (int i = 0; i < 100; i++) {
            struct stat st;
            check(stat(path, &st) == 0, "stat");
            if (i % 10 == 9)
                check(pwrite(fd, buf, 1024, ((off_t)rank * 10 + i / 10) * 1024) == 1024,
                      "pwrite");
        }
    } else if (!strcmp(mode, "rexattr")) {
        for (int i = 0; i < 100; i++) {
            char v[64];
            check(getxattr(path, "user.layout", v, sizeof v) == -1 && errno == ENODATA,
                  "getxattr");
            if (i % 10 == 9)
                check(pwrite(fd, buf, 1024, ((off_t)rank * 10 + i / 10) * 1024) == 1024,
                      "pwrite");
        }
    } else if (!strcmp(mode, "relist")) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        check(slash && slash != dir, "an absolute FILE below /");
        *slash = '\0';
        int d = open(dir, O_RDONLY | O_DIRECTORY);
        check(d >= 0, "open the directory");
        for (int i = 0; i < 100; i++) {
            char entries[4096];
            check(lseek(d, 0, SEEK_SET) == 0, "lseek");
            check(syscall(SYS_getdents64, d, entries, sizeof entries) > 0, "getdents64");
            if (i % 10 == 9)
                check(pwrite(fd, buf, 1024, ((off_t)rank * 10 + i / 10) * 1024) == 1024,
                      "pwrite");
        }
        close(d);
    } else if (!strcmp(mode, "mpi_small") || !strcmp(mode, "mpi_coll")) {
        MPI_File fh;
        check(!MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh),
              "MPI_File_open");
        if (!strcmp(mode, "mpi_small")) {
            for (long i = 0; i < RECORDS; i++)
                check(!MPI_File_write_at(fh, (MPI_Offset)(i * nprocs + rank) * RECORD, buf,
                                         RECORD, MPI_BYTE, MPI_STATUS_IGNORE),
                      "MPI_File_write_at");
        } else {
            MPI_Datatype strided;
            MPI_Type_vector(RECORDS, RECORD, RECORD * nprocs, MPI_BYTE, &strided);
            MPI_Type_commit(&strided);
            check(!MPI_File_set_view(fh, (MPI_Offset)rank * RECORD, MPI_BYTE, strided, "native",
                                     MPI_INFO_NULL),
                  "MPI_File_set_view");
            check(!MPI_File_write_all(fh, buf, RECORDS * RECORD, MPI_BYTE, MPI_STATUS_IGNORE),
                  "MPI_File_write_all");
            MPI_Type_free(&strided);
        }
        MPI_File_close(&fh);
    } else if (!strcmp(mode, "lines") || !strcmp(mode, "long_lines")) {
        size_t len = !strcmp(mode, "lines") ? 256 : 16384;
        char *line = malloc(len + 1);
        memset(line, 'a' + rank, len - 1);
        line[len - 1] = '\n';
        line[len] = '\0';
        FILE *f = fopen(path, "r+");
        check(f && fseek(f, (long)rank * 2 * REGION, SEEK_SET) == 0, "fopen and fseek");
        for (size_t done = 0; done < 2 * REGION; done += len)
            check(fputs(line, f) >= 0, "fputs");
        check(fclose(f) == 0, "fclose");
        free(line);
    } else if (!strcmp(mode, "dir_shared")) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        check(slash && slash != dir, "an absolute FILE below /");
        *slash = '\0';
        entries(dir, rank);
    } else if (!strcmp(mode, "subdirs_shared")) {
        for (int i = 0; i < 30; i++) {
            char d[4096];
            snprintf(d, sizeof d, "%s.s%d.%d", path, rank, i);
            check(mkdir(d, 0755) == 0, "mkdir");
            check(rmdir(d) == 0, "rmdir");
        }
    } else if (!strcmp(mode, "dir_own")) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s.d%d", path, rank);
        check(mkdir(dir, 0755) == 0, "mkdir");
        entries(dir, rank);
        check(rmdir(dir) == 0, "rmdir");
    } else if (!strcmp(mode, "once")) {
        for (int i = 0; i < 100; i++)
            check(pwrite(fd, buf, 1024, ((off_t)rank * 100 + i) * 1024) == 1024, "pwrite");
    } else {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    close(fd);
    free(buf);
    MPI_Finalize();
    return 0;
}
