/* ioctls on files: the commands probes.toml records and others it must drop in the kernel.
 *
 * Usage: ioctl DIR
 *
 * In DIR: `a` (4096 bytes written) and `b` (empty). Recorded commands, in this order:
 *   FICLONE b <- a; FICLONERANGE b <- a (0..4096 at 0); FIDEDUPERANGE of a's first 4096
 *   bytes against b's; FS_IOC_FIEMAP on a; the Lustre striping and group-lock commands on a
 *   (ENOTTY on any other file system), one given as a sign-extended `int`, as code that
 *   stores the command in an int passes it (the kernel reads its low 32 bits); FICLONE on a
 *   closed fd (EBADF).
 * Dropped: 1000 TCGETS on a (ENOTTY), isatty(a), FIONREAD and FS_IOC_GETFLAGS on a.
 *
 * Prints one line per recorded command, in order: `NAME VALUE FILE RET ERRNO` (VALUE as the
 * kernel reads it, in hex; FILE `a`, `b` or `-` for the closed fd; ERRNO 0 on success), so
 * the test compares strata's rows with what the program itself saw, whatever the file
 * system supports.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

/* lustre_user.h: struct lov_user_md (v1) is 32 packed bytes. */
struct lov_user_md_v1 {
    uint32_t lmm_magic, lmm_pattern;
    uint64_t lmm_oi[2];
    uint32_t lmm_stripe_size;
    uint16_t lmm_stripe_count, lmm_stripe_offset;
} __attribute__((packed));
#define LL_IOC_LOV_SETSTRIPE _IOW('f', 154, long)
#define LL_IOC_LOV_SETSTRIPE_NEW _IOWR('f', 154, struct lov_user_md_v1)
#define LL_IOC_LOV_GETSTRIPE _IOW('f', 155, long)
#define LL_IOC_LOV_GETSTRIPE_NEW _IOR('f', 155, struct lov_user_md_v1)
#define LL_IOC_GROUP_LOCK _IOW('f', 158, long)
#define LL_IOC_GROUP_UNLOCK _IOW('f', 159, long)

static int fd_a, fd_b;

static int open_in(const char *dir, const char *name) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    return fd;
}

static void call(const char *name, unsigned long cmd, int fd, void *arg) {
    int ret = ioctl(fd, cmd, arg);
    int err = ret < 0 ? errno : 0;
    const char *file = fd == fd_a ? "a" : fd == fd_b ? "b" : "-";
    printf("%s %#x %s %d %d\n", name, (unsigned)cmd, file, ret, err);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    static char buf[4096];
    memset(buf, 'x', sizeof buf);
    fd_a = open_in(argv[1], "a");
    fd_b = open_in(argv[1], "b");
    if (write(fd_a, buf, sizeof buf) != sizeof buf) return 1;
    fsync(fd_a);

    call("FICLONE", FICLONE, fd_b, (void *)(long)fd_a);
    struct file_clone_range range = {.src_fd = fd_a, .src_offset = 0, .src_length = 4096};
    call("FICLONERANGE", FICLONERANGE, fd_b, &range);
    struct {
        struct file_dedupe_range r;
        struct file_dedupe_range_info info;
    } dedupe = {.r = {.src_offset = 0, .src_length = 4096, .dest_count = 1},
                .info = {.dest_fd = fd_b}};
    call("FIDEDUPERANGE", FIDEDUPERANGE, fd_a, &dedupe);
    struct {
        struct fiemap m;
        struct fiemap_extent e[4];
    } map = {.m = {.fm_length = ~0ULL, .fm_extent_count = 4}};
    call("FS_IOC_FIEMAP", FS_IOC_FIEMAP, fd_a, &map);
    struct lov_user_md_v1 lum = {.lmm_magic = 0x0BD10BD0, .lmm_stripe_count = 2};
    call("LL_IOC_LOV_SETSTRIPE", LL_IOC_LOV_SETSTRIPE, fd_a, &lum);
    call("LL_IOC_LOV_SETSTRIPE_NEW", LL_IOC_LOV_SETSTRIPE_NEW, fd_a, &lum);
    call("LL_IOC_LOV_GETSTRIPE", LL_IOC_LOV_GETSTRIPE, fd_a, &lum);
    /* An int holding the command, sign-extended on its way to the unsigned long. */
    int as_int = (int)LL_IOC_LOV_GETSTRIPE_NEW;
    call("LL_IOC_LOV_GETSTRIPE_NEW", (unsigned long)(long)as_int, fd_a, &lum);
    call("LL_IOC_GROUP_LOCK", LL_IOC_GROUP_LOCK, fd_a, (void *)7L);
    call("LL_IOC_GROUP_UNLOCK", LL_IOC_GROUP_UNLOCK, fd_a, (void *)7L);

    /* Not recorded. */
    struct termios t;
    for (int i = 0; i < 1000; i++) ioctl(fd_a, TCGETS, &t);
    if (isatty(fd_a)) return 1;
    int n = -1;
    if (ioctl(fd_a, FIONREAD, &n) != 0 || n != 0) return 1; /* at the end of a */
    long flags;
    ioctl(fd_a, FS_IOC_GETFLAGS, &flags);

    int closed = dup(fd_a);
    close(closed);
    call("FICLONE", FICLONE, closed, (void *)(long)fd_a);
    fflush(stdout);
    return 0;
}
