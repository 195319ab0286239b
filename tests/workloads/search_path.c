/* Looks for a library in N directories, as a loader walking a search path does, R times over.
 *
 * usage: search_path MODE DIR N R
 *   missing  makes DIR/d0 .. DIR/d<N-1>, empty, and opens DIR/d<i>/libmissing.so.1 in each, R
 *            times over: N x R opens, each failing with ENOENT
 *   present  the same N x R opens of DIR/d<i>/libpresent.so.1, which each directory holds: all
 *            succeed (and are closed)
 * Exits 0 when every open ended as described. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 5) return 1;
    int present = strcmp(argv[1], "present") == 0;
    const char *dir = argv[2];
    int n = atoi(argv[3]), rounds = atoi(argv[4]);
    const char *name = present ? "libpresent.so.1" : "libmissing.so.1";
    char path[4096];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/d%d", dir, i);
        if (mkdir(path, 0755) != 0) return 2;
        if (present) {
            snprintf(path, sizeof path, "%s/d%d/%s", dir, i, name);
            int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
            if (fd < 0 || close(fd) != 0) return 2;
        }
    }
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) {
            snprintf(path, sizeof path, "%s/d%d/%s", dir, i, name);
            int fd = open(path, O_RDONLY);
            if (present ? fd < 0 : fd >= 0 || errno != ENOENT) return 3;
            if (fd >= 0) close(fd);
        }
    }
    return 0;
}
