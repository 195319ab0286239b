/* Whether the kernel set up a return probe in this process: reads its standard input line by
 * line with fgets_unlocked (a stdio probe's function, whose first instruction the kernel
 * emulates), then looks for the "[uprobes]" mapping in /proc/self/maps, which the kernel adds
 * to a process the first time it diverts a return (its trampoline lives there). Prints
 * "trampoline N" or "none N", N the lines read. No other stdio call: the maps and the result
 * go through open, read and write.
 * usage: return_probes < FILE */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char maps[1 << 20];

int main(void) {
    char line[256];
    int n = 0;
    while (fgets_unlocked(line, sizeof line, stdin)) n++;
    int fd = open("/proc/self/maps", O_RDONLY);
    if (fd < 0) return 2;
    size_t len = 0;
    ssize_t got;
    while (len < sizeof maps - 1 && (got = read(fd, maps + len, sizeof maps - 1 - len)) > 0)
        len += (size_t)got;
    close(fd);
    maps[len] = 0;
    char out[64];
    int k = snprintf(out, sizeof out, "%s %d\n", strstr(maps, "[uprobes]") ? "trampoline" : "none", n);
    return write(1, out, (size_t)k) == k ? 0 : 3;
}
