/* Files opened again through names of the process's own fds, as bash's process substitution
 * (`<(cmd)` is /dev/fd/63) and glibc's freopen(NULL, mode, f) (/proc/self/fd/N) do:
 *   A opened read-write, "0123456789" written
 *   /proc/self/fd/A opened, 4 bytes read; /dev/fd/A opened, 3 read (each at 0: a new open)
 *   A dup2'ed onto stdin; /dev/stdin opened, 2 bytes read
 *   a pipe made, "abc" written into it; /dev/fd/<its read end> opened, 3 bytes read
 *   B opened by fopen "w", "xy" put; freopen(NULL, "a"); "z" put; fclose: B holds "xyz"
 *   an O_TMPFILE file made in B's directory, "tmp" written; named B.1 by linkat of
 *   /proc/self/fd/N, and B.2 by linkat of the fd with AT_EMPTY_PATH; /dev/fd/N stat'ed;
 *   closed; B.1 opened and 3 bytes read
 *   /proc/self/status, /proc/net/route and /proc/mounts (the last two lead through
 *   /proc/self) opened, 4 bytes read from each
 * usage: fd_links A B */
#define _GNU_SOURCE
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Opens `fmt` with `fd` in it, reads `n` bytes: 0 when that many came. */
static int read_through(const char *fmt, int fd, int n) {
    char name[64], buf[16];
    snprintf(name, sizeof name, fmt, fd);
    int g = open(name, O_RDONLY);
    if (g < 0 || read(g, buf, n) != n) return -1;
    return close(g);
}

int main(int argc, char **argv) {
    if (argc != 3) return 1;
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "0123456789", 10) != 10) return 2;
    if (read_through("/proc/self/fd/%d", fd, 4)) return 3;
    if (read_through("/dev/fd/%d", fd, 3)) return 4;
    if (dup2(fd, 0) != 0 || read_through("/dev/stdin", 0, 2)) return 5;
    int p[2];
    if (pipe(p) || write(p[1], "abc", 3) != 3) return 6;
    if (read_through("/dev/fd/%d", p[0], 3)) return 7;
    FILE *f = fopen(argv[2], "w");
    if (!f || fputs("xy", f) < 0) return 8;
    f = freopen(NULL, "a", f);
    if (!f || fputs("z", f) < 0 || fclose(f)) return 9;
    char dir[4096], self[64], one[4200], two[4200];
    struct stat st;
    snprintf(dir, sizeof dir, "%s", argv[2]);
    snprintf(one, sizeof one, "%s.1", argv[2]);
    snprintf(two, sizeof two, "%s.2", argv[2]);
    unlink(one);
    unlink(two);
    int t = open(dirname(dir), O_TMPFILE | O_WRONLY, 0644);
    if (t < 0 || write(t, "tmp", 3) != 3) return 10;
    snprintf(self, sizeof self, "/proc/self/fd/%d", t);
    if (linkat(AT_FDCWD, self, AT_FDCWD, one, AT_SYMLINK_FOLLOW)) return 11;
    if (linkat(t, "", AT_FDCWD, two, AT_EMPTY_PATH)) return 12;
    snprintf(self, sizeof self, "/dev/fd/%d", t);
    if (stat(self, &st) || st.st_size != 3 || close(t)) return 13;
    if (read_through(one, 0, 3)) return 14;
    const char *own[] = {"/proc/self/status", "/proc/net/route", "/proc/mounts"};
    for (int i = 0; i < 3; i++)
        if (read_through(own[i], 0, 4)) return 15 + i;
    return 0;
}
