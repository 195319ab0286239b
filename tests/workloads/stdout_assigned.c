/* A program that points stdout at a file of its own, as glibc allows ("stdin, stdout and
 * stderr are normal variables which you can set just like any others"), then writes to it
 * with the calls that name no stream.
 *
 * Built with -no-pie, the executable has its own copy of `stdout` (a copy relocation): the
 * assignment changes that copy, which libc reaches through its GOT slot; libc's original
 * keeps pointing at the old stream. Built as PIE, the assignment changes libc's variable.
 *
 * usage: stdout_assigned DIR    Exit code 0 when every call returned what the comments say. */
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/log.txt", argv[1]);
    FILE *log = fopen(path, "w");
    if (!log) return 3;
    FILE *saved = stdout;
    stdout = log;
    if (printf("%d\n", 42) != 3) return 4;                      /* log.txt at 0 */
    if (puts("abc") < 0) return 5;                              /* at 3: 4 bytes */
    if (putchar('x') != 'x') return 6;                          /* at 7 */
    stdout = saved;
    if (fclose(log) != 0) return 7;
    if (printf("%d\n", 0) != 2) return 8;                       /* the real stdout */
    return 0;
}
