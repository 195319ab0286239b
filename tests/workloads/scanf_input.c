/* Reads an input deck as simulation codes read their parameters: field by field with fscanf,
 * across refills of the stream's buffer, to the end of the file. The host test writes the
 * deck and knows where each field ends.
 *
 * usage: scanf_input DECK     (stdin: the same deck)
 * The deck's lines are "I I*I\n" for I = 0, 1, 2, ...
 *
 *   1. lines in turn through fscanf and vfscanf ("%ld %ld"), up to the EOF that consumes
 *      the last newline;
 *   2. rewind, one field with fscanf, the rest of its line with fgets;
 *   3. three lines of stdin with scanf, then its next character with getchar;
 *   4. fscanf on a stream over memory (fmemopen), which has no fd.
 * Exit code 0 when every field read back is right. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int vread(FILE *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vfscanf(f, fmt, ap);
    va_end(ap);
    return n;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    FILE *f = fopen(argv[1], "r");
    if (!f) return 3;
    long i = 0, a = 0, b = 0;
    for (;; i++) {
        int n = i % 2 ? vread(f, "%ld %ld", &a, &b) : fscanf(f, "%ld %ld", &a, &b);
        if (n == EOF) break;
        if (n != 2 || a != i || b != i * i) return 4;
    }
    if (i == 0) return 5;

    rewind(f);
    char line[64];
    if (fscanf(f, "%ld", &a) != 1 || a != 0) return 6;
    if (!fgets(line, sizeof line, f) || strcmp(line, " 0\n")) return 7;
    if (fclose(f)) return 8;

    for (long k = 0; k < 3; k++)
        if (scanf("%ld %ld", &a, &b) != 2 || a != k || b != k * k) return 9;
    if (getchar() != '\n') return 10;

    char mem[] = "12 34";
    FILE *m = fmemopen(mem, strlen(mem), "r");
    if (!m) return 11;
    if (fscanf(m, "%ld", &a) != 1 || a != 12) return 12;
    if (fclose(m)) return 13;
    return 0;
}
