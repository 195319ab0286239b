/* Metadata calls beyond open and stat: links, permissions, owners, times, extended
 * attributes, directory listings, advice, locks and splices, each made once as the raw
 * syscall named (so that the C library's choice of syscall does not matter), with its result
 * checked.
 *
 * Usage: meta DIR (as root: it changes owners to root's)
 *
 * In DIR, in this order (F: fd of DIR/f, D: fd of DIR):
 *   f created, 10 bytes written through F
 *   link f hard; linkat D f D hard2 0; symlink "f" soft; symlinkat "f" D soft2
 *   readlink soft (1); readlinkat D soft2 (1); statfs f; fstatfs F
 *   chmod f 0600; fchmod F 0640; fchmodat D f 0644; fchmodat2 D f 0600 0 (0, or ENOSYS
 *   before Linux 6.6)
 *   chown f 0 0; fchown F -1 -1; lchown soft 0 0; fchownat D f -1 -1 0
 *   utimensat D f NULL 0; utimensat F NULL NULL 0; utime f NULL; utimes f NULL; futimesat D f
 *   NULL
 *   setxattr f user.a "v1"; fsetxattr F user.b "v22"; getxattr f user.a (2); lgetxattr
 *   f user.b (3); fgetxattr F user.a (2); listxattr f (14); llistxattr soft (0);
 *   flistxattr F (14); removexattr f user.a; fremovexattr F user.b; lremovexattr f user.a
 *   (ENODATA); setxattrat D f user.c "v333"; getxattrat D f user.c (4); listxattrat D f (7);
 *   removexattrat D f user.c (Linux 6.13+, else ENOSYS)
 *   fadvise64 F 0 10 DONTNEED; readahead F 0 10; sync_file_range F 2 5 WRITE
 *   flock F EX; flock F UN
 *   name_to_handle_at D f; open_by_handle_at D (H), 4 bytes read through H, H closed
 *   cachestat F 0 10 (Linux 6.5+); file_getattr D f, file_setattr D f with what it gave
 *   (Linux 6.17+)
 *   mkdir d; d/x created; getdents64 on d (72 bytes: ".", ".." and "x"), then again (0);
 *   back to its start, getdents (72), then again (0)
 *   mknodat D fifo FIFO 0644; mknod fifo2 FIFO 0600
 *   splice 4 bytes from F at 3 into a pipe, then from the pipe into g at 100
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
/* Newer than the C library's headers may be. */
#define NR_cachestat 451
#define NR_setxattrat 463
#define NR_getxattrat 464
#define NR_listxattrat 465
#define NR_removexattrat 466
#define NR_file_getattr 468
#define NR_file_setattr 469

struct xattr_args {
    unsigned long long value;
    unsigned int size, flags;
};
struct file_attr {
    unsigned int xflags, extsize, nextents, projid, cowextsize, pad;
};
struct handle {
    unsigned int bytes;
    int type;
    unsigned char data[128];
};

/* A syscall a kernel may not have: ENOSYS is fine, anything else must be `want`. */
static void expect_new(long got, long want, const char *what);

static char dir[4000];

static const char *at(const char *name) {
    static char paths[8][4100];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", dir, name);
    return p;
}

/* `got` is a syscall's return; `want` its expected value, or -errno. */
static void expect(long got, long want, const char *what) {
    long r = got < 0 ? -errno : got;
    if (r != want) {
        fprintf(stderr, "%s: %ld, expected %ld\n", what, r, want);
        exit(1);
    }
}

static void expect_new(long got, long want, const char *what) {
    if (got < 0 && errno == ENOSYS) return;
    expect(got, want, what);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: meta DIR\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    char buf[4096];
    struct statfs sfs;

    int F = open(at("f"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    int D = open(dir, O_RDONLY | O_DIRECTORY);
    if (F < 0 || D < 0) {
        perror(dir);
        return 1;
    }
    expect(write(F, "0123456789", 10), 10, "write");

    expect(syscall(SYS_link, at("f"), at("hard")), 0, "link");
    expect(syscall(SYS_linkat, D, "f", D, "hard2", 0), 0, "linkat");
    expect(syscall(SYS_symlink, "f", at("soft")), 0, "symlink");
    expect(syscall(SYS_symlinkat, "f", D, "soft2"), 0, "symlinkat");
    expect(syscall(SYS_readlink, at("soft"), buf, 64), 1, "readlink");
    expect(syscall(SYS_readlinkat, D, "soft2", buf, 64), 1, "readlinkat");
    expect(syscall(SYS_statfs, at("f"), &sfs), 0, "statfs");
    expect(syscall(SYS_fstatfs, F, &sfs), 0, "fstatfs");

    expect(syscall(SYS_chmod, at("f"), 0600), 0, "chmod");
    expect(syscall(SYS_fchmod, F, 0640), 0, "fchmod");
    expect(syscall(SYS_fchmodat, D, "f", 0644), 0, "fchmodat");
    long r = syscall(SYS_fchmodat2, D, "f", 0600, 0);
    if (r != 0 && errno != ENOSYS)
        expect(r, 0, "fchmodat2");
    expect(syscall(SYS_chown, at("f"), 0, 0), 0, "chown");
    expect(syscall(SYS_fchown, F, -1, -1), 0, "fchown");
    expect(syscall(SYS_lchown, at("soft"), 0, 0), 0, "lchown");
    expect(syscall(SYS_fchownat, D, "f", -1, -1, 0), 0, "fchownat");
    expect(syscall(SYS_utimensat, D, "f", NULL, 0), 0, "utimensat");
    expect(syscall(SYS_utimensat, F, NULL, NULL, 0), 0, "utimensat (futimens)");
    expect(syscall(SYS_utime, at("f"), NULL), 0, "utime");
    expect(syscall(SYS_utimes, at("f"), NULL), 0, "utimes");
    expect(syscall(SYS_futimesat, D, "f", NULL), 0, "futimesat");

    expect(syscall(SYS_setxattr, at("f"), "user.a", "v1", 2, 0), 0, "setxattr");
    expect(syscall(SYS_fsetxattr, F, "user.b", "v22", 3, 0), 0, "fsetxattr");
    expect(syscall(SYS_getxattr, at("f"), "user.a", buf, 64), 2, "getxattr");
    expect(syscall(SYS_lgetxattr, at("f"), "user.b", buf, 64), 3, "lgetxattr");
    expect(syscall(SYS_fgetxattr, F, "user.a", buf, 64), 2, "fgetxattr");
    expect(syscall(SYS_listxattr, at("f"), buf, 256), 14, "listxattr");
    expect(syscall(SYS_llistxattr, at("soft"), buf, 256), 0, "llistxattr");
    expect(syscall(SYS_flistxattr, F, buf, 256), 14, "flistxattr");
    expect(syscall(SYS_removexattr, at("f"), "user.a"), 0, "removexattr");
    expect(syscall(SYS_fremovexattr, F, "user.b"), 0, "fremovexattr");
    expect(syscall(SYS_lremovexattr, at("f"), "user.a"), -ENODATA, "lremovexattr");
    struct xattr_args xa = {(unsigned long long)(size_t) "v333", 4, 0};
    expect_new(syscall(NR_setxattrat, D, "f", 0, "user.c", &xa, sizeof xa), 0, "setxattrat");
    xa.value = (unsigned long long)(size_t)buf;
    xa.size = 64;
    expect_new(syscall(NR_getxattrat, D, "f", 0, "user.c", &xa, sizeof xa), 4, "getxattrat");
    expect_new(syscall(NR_listxattrat, D, "f", 0, buf, 256), 7, "listxattrat");
    expect_new(syscall(NR_removexattrat, D, "f", 0, "user.c"), 0, "removexattrat");

    expect(syscall(SYS_fadvise64, F, 0, 10, POSIX_FADV_DONTNEED), 0, "fadvise64");
    expect(syscall(SYS_readahead, F, 0, 10), 0, "readahead");
    expect(syscall(SYS_sync_file_range, F, 2, 5, SYNC_FILE_RANGE_WRITE), 0, "sync_file_range");
    expect(syscall(SYS_flock, F, LOCK_EX), 0, "flock");
    expect(syscall(SYS_flock, F, LOCK_UN), 0, "flock");
    struct handle fh = {.bytes = sizeof fh.data};
    int mount_id;
    expect(syscall(SYS_name_to_handle_at, D, "f", &fh, &mount_id, 0), 0, "name_to_handle_at");
    long H = syscall(SYS_open_by_handle_at, D, &fh, O_RDONLY);
    expect(H < 0 ? H : 0, 0, "open_by_handle_at");
    expect(read((int)H, buf, 4), 4, "read through the handle's fd");
    close((int)H);
    unsigned long long range[2] = {0, 10}, cstat[5];
    expect_new(syscall(NR_cachestat, F, range, cstat, 0), 0, "cachestat");
    struct file_attr fa = {0};
    long got = syscall(NR_file_getattr, D, "f", &fa, sizeof fa, 0);
    expect_new(got, 0, "file_getattr");
    if (got == 0)
        expect(syscall(NR_file_setattr, D, "f", &fa, sizeof fa, 0), 0, "file_setattr");

    expect(mkdir(at("d"), 0755), 0, "mkdir");
    int x = open(at("d/x"), O_CREAT | O_WRONLY, 0644);
    expect(x < 0 ? -1 : 0, 0, "create d/x");
    close(x);
    int E = open(at("d"), O_RDONLY | O_DIRECTORY);
    expect(E < 0 ? -1 : 0, 0, "open d");
    expect(syscall(SYS_getdents64, E, buf, sizeof buf), 72, "getdents64");
    expect(syscall(SYS_getdents64, E, buf, sizeof buf), 0, "getdents64 at the end");
    expect(lseek(E, 0, SEEK_SET), 0, "lseek d");
    expect(syscall(SYS_getdents, E, buf, sizeof buf), 72, "getdents");
    expect(syscall(SYS_getdents, E, buf, sizeof buf), 0, "getdents at the end");
    close(E);

    expect(syscall(SYS_mknodat, D, "fifo", S_IFIFO | 0644, 0), 0, "mknodat");
    expect(syscall(SYS_mknod, at("fifo2"), S_IFIFO | 0600, 0), 0, "mknod");

    int p[2];
    expect(pipe(p), 0, "pipe");
    int G = open(at("g"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    loff_t in = 3, out = 100;
    expect(syscall(SYS_splice, F, &in, p[1], NULL, 4, 0), 4, "splice in");
    expect(syscall(SYS_splice, p[0], NULL, G, &out, 4, 0), 4, "splice out");
    close(G);
    close(F);
    close(D);
    return 0;
}
