/* Whether uprobes wrote breakpoints into this process's libc at fgets (a stdio probe): the
 * first 16 bytes of fgets in memory against the same bytes of the library's file, found
 * through /proc/self/maps. Prints "breakpoint" when they differ, "clean" when they agree.
 * usage: libc_breakpoints */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void) {
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    unsigned long at = libc ? (unsigned long)dlsym(libc, "fgets") : 0;
    if (!at) return 2;
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) return 3;
    char line[4096], path[4096];
    unsigned long start, end, offset;
    int found = 0;
    while (fgets(line, sizeof line, maps)) {
        if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %4095s", &start, &end, &offset, path) == 4 &&
            start <= at && at + 16 <= end) {
            found = 1;
            break;
        }
    }
    fclose(maps);
    if (!found) return 4;
    unsigned char file[16];
    int fd = open(path, O_RDONLY);
    if (fd < 0 || pread(fd, file, sizeof file, (off_t)(at - start + offset)) != sizeof file) return 5;
    close(fd);
    puts(memcmp(file, (const void *)at, sizeof file) ? "breakpoint" : "clean");
    return 0;
}
