/* I/O through io_uring, with the raw syscalls (no liburing): what strata can see of it.
 *
 * Usage: uring DIR [requests|sqpoll|files]. Prints "ring=FD data=FD" (and " opened=FD
 * ftruncate=RES xattr=RES" with `files`).
 *
 * io_uring_setup of 4 entries; its rings mapped; io_uring_register(IORING_REGISTER_FILES) of
 * DIR/uring.dat (opened first, as `data`; with `files`, a second, empty slot follows). Then one IORING_OP_WRITE of
 * 4 KiB ('u') at offset 8 KiB to that file, submitted and waited for by one
 * io_uring_enter(ring, 1, 1, IORING_ENTER_GETEVENTS), whose completion says 4096.
 *
 * With `requests`, six more entries follow, each io_uring_enter(ring, n, n, GETEVENTS)
 * submitting n requests and waiting for them, every result checked:
 *   2. IORING_OP_WRITEV on data at offset 0 of two iovecs (1000 'a', 3000 'b'): 4000
 *   3. IORING_OP_WRITE on registered file 0 (IOSQE_FIXED_FILE) of 512 B at 16384: 512
 *   4. IORING_OP_FSYNC on data: 0
 *   5. two IORING_OP_READs on data, 1000 B at 0 and 3000 B at 1000: 1000 and 3000
 *   6. IORING_OP_READ on fd 999 (not open) of 100 B at 0: -EBADF
 *   7. IORING_OP_WRITE on data of 10 B at offset -1 (the file's position, 0): 10
 * With `sqpoll`, the ring is set up with IORING_SETUP_SQPOLL: the kernel's polling thread (a
 * thread of the process, "iou-sqp-PID") submits the one write, and the io_uring_enter (with
 * IORING_ENTER_SQ_WAKEUP) only waits for it.
 * With `files`, entries of one request each follow, on DIR/ring.txt:
 *   2. IORING_OP_OPENAT (AT_FDCWD, the absolute path, O_RDWR|O_CREAT|O_TRUNC, 0640): `opened`
 *   3. IORING_OP_WRITE on opened of 100 B ('r') at 0: 100
 *   4. IORING_OP_STATX (AT_FDCWD, the path, flags 0, STATX_SIZE): 0, and the size is 100
 *   4b. IORING_OP_FTRUNCATE of opened to 200 B: 0 (and the size is 200), or -EINVAL before
 *      Linux 6.9, which refuses the opcode while preparing it (no row); printed as RES
 *   5. IORING_OP_CLOSE of opened: 0, and opened is closed after it
 *   6. IORING_OP_OPENAT of the path, O_RDONLY, into registered slot 1 (file_index 2): 0
 *   7. IORING_OP_READ on registered file 1 (IOSQE_FIXED_FILE) of 100 B at 0: 100
 *   8. IORING_OP_CLOSE of registered slot 1 (file_index 2): 0
 *   9. IORING_OP_MKDIRAT (AT_FDCWD, DIR/ring.d, 0750): 0
 *  10. IORING_OP_RENAMEAT (AT_FDCWD, DIR/ring.d, AT_FDCWD, DIR/ring.e, flags 0): 0
 *  11. IORING_OP_UNLINKAT (AT_FDCWD, DIR/ring.e, AT_REMOVEDIR): 0, and DIR/ring.e is gone
 *  12. IORING_OP_SYMLINKAT ("ring.txt", AT_FDCWD, DIR/ring.lnk): 0, and the link says ring.txt
 *  13. IORING_OP_LINKAT (AT_FDCWD, DIR/ring.txt, AT_FDCWD, DIR/ring.hard, 0): 0, and ring.txt
 *      has two links
 *  14. IORING_OP_FADVISE on data, 100 B at 0, POSIX_FADV_DONTNEED: 0
 *  15. IORING_OP_SETXATTR (DIR/ring.txt, user.r, "v1", 2 B, flags 0): 0, or -EOPNOTSUPP where
 *      the file system has no user attributes (tmpfs before Linux 6.6); printed as RES
 *  16. IORING_OP_FSETXATTR on data (user.d, "xyz", 3 B, flags 0): 0 (or that error)
 *  17. IORING_OP_FGETXATTR on data (user.d, 64 B): 3 (or that error)
 *  18. IORING_OP_GETXATTR (DIR/ring.txt, user.r, 64 B): 2 (or that error)
 *  19. IORING_OP_FALLOCATE on data, mode 0, 4096 B at 16384 (past its end: it grows): 0
 *  20. IORING_OP_SYNC_FILE_RANGE on data, 4096 B at 8192, SYNC_FILE_RANGE_WRITE: 0
 *  21. IORING_OP_FSYNC on data with fsync_flags 2 (no such flag): -EINVAL, refused while
 *      the kernel prepares it
 * Then the ring and data closed. No request is a syscall of the process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ring.h"

#ifndef IORING_OP_FTRUNCATE
#define IORING_OP_FTRUNCATE 55
#endif

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "%s failed (errno %d)\n", what, errno);
        exit(1);
    }
}

/* Any result of at least 0 (a descriptor). */
#define ANY_FD (-1000000)
static int last_res;

struct want {
    const int *want;
    unsigned n;
    const char *what;
};

static void expect(void *ctx, unsigned long long user_data, int res) {
    struct want *w = ctx;
    int any = user_data < w->n && w->want[user_data] == ANY_FD && res >= 0;
    last_res = res;
    if (user_data >= w->n || (!any && res != w->want[user_data])) {
        fprintf(stderr, "%s: request %llu gave %d\n", w->what, user_data, res);
        exit(1);
    }
}

/* Any result: kept in last_res. */
static void expect_any(void *ctx, unsigned long long user_data, int res) {
    (void)ctx;
    (void)user_data;
    last_res = res;
}

/* Submits the `n` requests queued and waits for them; checks request i's result is want[i]
 * (ANY_FD: any descriptor); the last result read is kept in last_res. */
static void enter(struct ring *r, unsigned n, const int *want, const char *what) {
    check(ring_enter(r, n) == (long)n, what);
    struct want w = {want, n, what};
    check(ring_reap(r, expect, &w) == n, what);
}

int main(int argc, char **argv) {
    int requests = argc == 3 && strcmp(argv[2], "requests") == 0;
    int sqpoll = argc == 3 && strcmp(argv[2], "sqpoll") == 0;
    int files = argc == 3 && strcmp(argv[2], "files") == 0;
    check(argc == 2 || requests || sqpoll || files, "usage: uring DIR [requests|sqpoll|files]");
    char path[4200];
    snprintf(path, sizeof path, "%s/uring.dat", argv[1]);
    int data = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(data >= 0, "open");

    struct ring r;
    memset(&r, 0, sizeof r);
    if (sqpoll) {
        r.p.flags = IORING_SETUP_SQPOLL;
        r.p.sq_thread_idle = 1000;
        r.enter_flags = IORING_ENTER_SQ_WAKEUP;
    }
    check(ring_setup(&r, 4) == 0, "io_uring_setup");
    int table[2] = {data, -1};
    check(syscall(__NR_io_uring_register, r.fd, IORING_REGISTER_FILES, table, files ? 2 : 1) == 0,
          "io_uring_register");

    static char buf[4096], in[4096];
    memset(buf, 'u', sizeof buf);
    ring_queue(&r, 0, IORING_OP_WRITE, data, buf, sizeof buf, 8192, 0);
    enter(&r, 1, (int[]){4096}, "the write");

    if (requests) {
        static char a[1000], b[3000];
        memset(a, 'a', sizeof a);
        memset(b, 'b', sizeof b);
        struct iovec iov[2] = {{a, sizeof a}, {b, sizeof b}};
        ring_queue(&r, 0, IORING_OP_WRITEV, data, iov, 2, 0, 0);
        enter(&r, 1, (int[]){4000}, "the writev");
        ring_queue(&r, 0, IORING_OP_WRITE, 0, buf, 512, 16384, IOSQE_FIXED_FILE);
        enter(&r, 1, (int[]){512}, "the write to the registered file");
        ring_queue(&r, 0, IORING_OP_FSYNC, data, NULL, 0, 0, 0);
        enter(&r, 1, (int[]){0}, "the fsync");
        ring_queue(&r, 0, IORING_OP_READ, data, in, 1000, 0, 0);
        ring_queue(&r, 1, IORING_OP_READ, data, in + 1000, 3000, 1000, 0);
        enter(&r, 2, (int[]){1000, 3000}, "the two reads");
        check(memcmp(in, a, sizeof a) == 0 && memcmp(in + 1000, b, sizeof b) == 0, "data read");
        ring_queue(&r, 0, IORING_OP_READ, 999, in, 100, 0, 0);
        enter(&r, 1, (int[]){-EBADF}, "the read of a bad fd");
        ring_queue(&r, 0, IORING_OP_WRITE, data, buf, 10, -1, 0);
        enter(&r, 1, (int[]){10}, "the write at the file's position");
        check(lseek(data, 0, SEEK_CUR) == 10, "the file's position after it");
    }
    int opened = -1, truncated = 1, xattr = 1;
    if (files) {
        char txt[4200];
        snprintf(txt, sizeof txt, "%s/ring.txt", argv[1]);
        struct io_uring_sqe *e = ring_queue(&r, 0, IORING_OP_OPENAT, AT_FDCWD, txt, 0640, 0, 0);
        e->open_flags = O_RDWR | O_CREAT | O_TRUNC;
        enter(&r, 1, (int[]){ANY_FD}, "the open");
        opened = last_res;
        static char rbuf[100];
        memset(rbuf, 'r', sizeof rbuf);
        ring_queue(&r, 0, IORING_OP_WRITE, opened, rbuf, sizeof rbuf, 0, 0);
        enter(&r, 1, (int[]){100}, "the write to the opened file");
        static struct statx stx;
        e = ring_queue(&r, 0, IORING_OP_STATX, AT_FDCWD, txt, STATX_SIZE, (long long)(unsigned long)&stx,
                  0);
        e->statx_flags = 0;
        enter(&r, 1, (int[]){0}, "the statx");
        check(stx.stx_size == 100, "the size statx gave");
        ring_queue(&r, 0, IORING_OP_FTRUNCATE, opened, NULL, 0, 200, 0);
        check(ring_enter(&r, 1) == 1, "the ftruncate");
        last_res = 1;
        check(ring_reap(&r, expect_any, NULL) == 1, "the ftruncate's completion");
        truncated = last_res;
        check(truncated == 0 ? lseek(opened, 0, SEEK_END) == 200 : truncated == -EINVAL,
              "the ftruncate's result");
        ring_queue(&r, 0, IORING_OP_CLOSE, opened, NULL, 0, 0, 0);
        enter(&r, 1, (int[]){0}, "the close");
        check(fcntl(opened, F_GETFD) == -1 && errno == EBADF, "opened closed by the close");
        e = ring_queue(&r, 0, IORING_OP_OPENAT, AT_FDCWD, txt, 0, 0, 0);
        e->open_flags = O_RDONLY;
        e->file_index = 2;
        enter(&r, 1, (int[]){0}, "the open into slot 1");
        ring_queue(&r, 0, IORING_OP_READ, 1, in, 100, 0, IOSQE_FIXED_FILE);
        enter(&r, 1, (int[]){100}, "the read of slot 1");
        check(memcmp(in, rbuf, sizeof rbuf) == 0, "data read from slot 1");
        e = ring_queue(&r, 0, IORING_OP_CLOSE, 0, NULL, 0, 0, 0);
        e->file_index = 2;
        enter(&r, 1, (int[]){0}, "the close of slot 1");
        char dir_d[4200], dir_e[4200];
        snprintf(dir_d, sizeof dir_d, "%s/ring.d", argv[1]);
        snprintf(dir_e, sizeof dir_e, "%s/ring.e", argv[1]);
        ring_queue(&r, 0, IORING_OP_MKDIRAT, AT_FDCWD, dir_d, 0750, 0, 0);
        enter(&r, 1, (int[]){0}, "the mkdir");
        e = ring_queue(&r, 0, IORING_OP_RENAMEAT, AT_FDCWD, dir_d, AT_FDCWD,
                  (long long)(unsigned long)dir_e, 0);
        e->rename_flags = 0;
        enter(&r, 1, (int[]){0}, "the rename");
        e = ring_queue(&r, 0, IORING_OP_UNLINKAT, AT_FDCWD, dir_e, 0, 0, 0);
        e->unlink_flags = AT_REMOVEDIR;
        enter(&r, 1, (int[]){0}, "the unlink");
        check(access(dir_e, F_OK) == -1 && errno == ENOENT, "ring.e removed");
        char lnk[4200], hard[4200], target[64];
        snprintf(lnk, sizeof lnk, "%s/ring.lnk", argv[1]);
        snprintf(hard, sizeof hard, "%s/ring.hard", argv[1]);
        ring_queue(&r, 0, IORING_OP_SYMLINKAT, AT_FDCWD, "ring.txt", 0, (long long)(unsigned long)lnk,
                   0);
        enter(&r, 1, (int[]){0}, "the symlink");
        check(readlink(lnk, target, sizeof target) == 8 && memcmp(target, "ring.txt", 8) == 0,
              "the symlink's target");
        e = ring_queue(&r, 0, IORING_OP_LINKAT, AT_FDCWD, txt, AT_FDCWD,
                       (long long)(unsigned long)hard, 0);
        e->hardlink_flags = 0;
        enter(&r, 1, (int[]){0}, "the link");
        struct stat st;
        check(stat(txt, &st) == 0 && st.st_nlink == 2, "ring.txt's links");
        e = ring_queue(&r, 0, IORING_OP_FADVISE, data, NULL, 100, 0, 0);
        e->fadvise_advice = POSIX_FADV_DONTNEED;
        enter(&r, 1, (int[]){0}, "the fadvise");
        e = ring_queue(&r, 0, IORING_OP_SETXATTR, 0, "user.r", 2, (long long)(unsigned long)"v1", 0);
        e->addr3 = (unsigned long)txt;
        check(ring_enter(&r, 1) == 1, "the setxattr");
        check(ring_reap(&r, expect_any, NULL) == 1, "the setxattr's completion");
        xattr = last_res;
        check(xattr == 0 || xattr == -EOPNOTSUPP, "the setxattr's result");
        int ok = xattr == 0;
        ring_queue(&r, 0, IORING_OP_FSETXATTR, data, "user.d", 3, (long long)(unsigned long)"xyz",
                   0);
        enter(&r, 1, (int[]){ok ? 0 : xattr}, "the fsetxattr");
        static char value[64];
        ring_queue(&r, 0, IORING_OP_FGETXATTR, data, "user.d", sizeof value,
                   (long long)(unsigned long)value, 0);
        enter(&r, 1, (int[]){ok ? 3 : xattr}, "the fgetxattr");
        check(!ok || memcmp(value, "xyz", 3) == 0, "the value fgetxattr read");
        e = ring_queue(&r, 0, IORING_OP_GETXATTR, 0, "user.r", sizeof value,
                       (long long)(unsigned long)value, 0);
        e->addr3 = (unsigned long)txt;
        enter(&r, 1, (int[]){ok ? 2 : xattr}, "the getxattr");
        /* fallocate: the length in addr, the mode in len. */
        ring_queue(&r, 0, IORING_OP_FALLOCATE, data, (void *)4096, 0, 16384, 0);
        enter(&r, 1, (int[]){0}, "the fallocate");
        e = ring_queue(&r, 0, IORING_OP_SYNC_FILE_RANGE, data, NULL, 4096, 8192, 0);
        e->sync_range_flags = SYNC_FILE_RANGE_WRITE;
        enter(&r, 1, (int[]){0}, "the sync_file_range");
        e = ring_queue(&r, 0, IORING_OP_FSYNC, data, NULL, 0, 0, 0);
        e->fsync_flags = 2;
        enter(&r, 1, (int[]){-EINVAL}, "the fsync refused");
    }
    check(close(r.fd) == 0, "close ring");
    check(close(data) == 0, "close data");
    if (files)
        printf("ring=%d data=%d opened=%d ftruncate=%d xattr=%d\n", r.fd, data, opened, truncated,
               xattr);
    else
        printf("ring=%d data=%d\n", r.fd, data);
    return 0;
}
