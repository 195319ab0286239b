/* A fixed sequence of stdio calls whose bytes, positions and results are known. The host
 * tests build it twice and compare the rows with this sequence:
 *   -O0                          every function below is called by its own name, except
 *                                fscanf, scanf, vfscanf and vscanf, which <stdio.h> sends
 *                                to glibc's __isoc99_ versions;
 *   -O2 -D_FORTIFY_SOURCE=2      the printf family and the reads into buffers of known size
 *                                call the checked __*_chk versions, getline becomes
 *                                __getdelim, and the *_unlocked character functions are
 *                                inlined (no call at all).
 * Keep the three in step.
 *
 * usage: stdio_calls DIR     (stdin must be at its end: /dev/null)
 * Exit code 0 when every call returned what the comments say; writes stdout to
 * DIR/stdout.txt. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int vwrite(FILE *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vfprintf(f, fmt, ap);
    va_end(ap);
    return n;
}

static int vread(FILE *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vfscanf(f, fmt, ap);
    va_end(ap);
    return n;
}

static int vdwrite(int fd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vdprintf(fd, fmt, ap);
    va_end(ap);
    return n;
}

static int vout(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vprintf(fmt, ap);
    va_end(ap);
    return n;
}

static int vin(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vscanf(fmt, ap);
    va_end(ap);
    return n;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    char path[600], fdpath[600];
    snprintf(path, sizeof path, "%s/stream.txt", argv[1]);
    snprintf(fdpath, sizeof fdpath, "%s/fd.txt", argv[1]);
    /* Sizes and strings the compiler cannot see, so that it keeps each call as written. */
    volatile size_t one = 1, three = 3, eight = 8, line_max = 64;
    char tail[8], word[8], nl[2];
    strcpy(tail, "tail\n");
    strcpy(word, "abc");
    strcpy(nl, "\n");

    /* Writes: "42 abc\n" "00007\n" "ab" "\n" "tail\n" "cd" = 23 bytes. */
    FILE *f = fopen(path, "w+");
    if (!f) return 3;
    if (fprintf(f, "%d %s\n", 42, word) != 7) return 10;      /* at 0 */
    if (vwrite(f, "%05d\n", 7) != 6) return 11;                /* at 7 */
    if (fputc('a', f) != 'a') return 12;                       /* at 13 */
    if (putc('b', f) != 'b') return 13;                        /* at 14 */
    if (fwrite(nl, 1, one, f) != 1) return 14;                 /* at 15 */
    if (fputs(tail, f) < 0) return 15;                         /* at 16: bytes not returned */
    if (fputc_unlocked('c', f) != 'c') return 16;              /* at 21 */
    if (putc_unlocked('d', f) != 'd') return 17;               /* at 22 */
    if (fflush(f) != 0) return 18;                             /* write(2) of 23 bytes at 0 */
    if (fflush_unlocked(f) != 0) return 19;                    /* nothing left to write */
    rewind(f);

    /* Reads of the same 23 bytes. */
    char buf[64], line[64];
    if (fread(buf, 1, three, f) != 3) return 20;              /* "42 " at 0; read(2) at 0 */
    if (fgetc(f) != 'a') return 21;                            /* at 3 */
    if (getc(f) != 'b') return 22;                             /* at 4 */
    if (ungetc('b', f) != 'b') return 38;                      /* back to 4 */
    char *got = NULL;
    size_t cap = 0;
    if (getline(&got, &cap, f) != 3) return 23;                /* "bc\n" at 4 */
    free(got);
    int x = 0;
    if (fscanf(f, "%d", &x) != 1 || x != 7) return 24;         /* "00007" at 7 */
    if (!fgets(line, (int)line_max, f) || strcmp(line, "\n")) return 25;
    if (!fgets_unlocked(line, (int)line_max, f) || strcmp(line, "ab\n")) return 26;
    if (fgetc_unlocked(f) != 't') return 27;
    if (vread(f, "%7s", word) != 1 || strcmp(word, "ail")) return 28;
    if (fread_unlocked(buf, 1, eight, f) != 3) return 29;     /* "\ncd": the end */
    if (fclose(f) != 0) return 30;

    /* Text whose length strata reads in pieces of 511 bytes, 16 at most: 510 bytes (one
     * piece), 511 (a full piece, then its NUL alone), 8175 (the longest it tells), and 8176,
     * too long for it to tell. */
    snprintf(path, sizeof path, "%s/long.txt", argv[1]);
    FILE *l = fopen(path, "w");
    if (!l) return 40;
    static char text[9000];
    memset(text, 'x', 8176);
    text[510] = '\0';
    if (fputs(text, l) < 0) return 41;                         /* at 0 */
    text[510] = 'x';
    text[511] = '\0';
    if (fputs(text, l) < 0) return 42;                         /* at 510 */
    text[511] = 'x';
    text[8175] = '\0';
    if (fputs(text, l) < 0) return 44;                         /* at 1021 */
    text[8175] = 'x';
    if (fputs(text, l) < 0) return 45;                         /* at 9196 */
    if (fclose(l) != 0) return 43;

    /* Formatted writes to a descriptor: each is one write(2) beneath it. */
    int fd = open(fdpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 31;
    if (dprintf(fd, "%d\n", 12345) != 6) return 32;           /* at 0 */
    if (vdwrite(fd, "%s\n", "xy") != 3) return 33;             /* at 6 */
    if (close(fd) != 0) return 34;

    /* stdout, made stdout.txt's fd before its first use: a stream strata did not see opened.
     * printf, vprintf, puts and putchar do not name it; fputs and fflush do. */
    snprintf(path, sizeof path, "%s/stdout.txt", argv[1]);
    int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || dup2(out, 1) != 1 || close(out) != 0) return 44;
    if (printf("%d\n", 5) != 2) return 35;
    if (vout("%s\n", "ok") != 3) return 36;
    if (puts("hi") < 0) return 47;                             /* "hi\n" */
    if (putchar('!') != '!') return 48;
    if (putchar_unlocked('?') != '?') return 49;
    if (fputs("end\n", stdout) < 0) return 45;
    if (fflush(stdout) != 0) return 46;                        /* write(2) of 14 bytes at 0 */
    /* stdin, at its end. */
    if (scanf("%d", &x) != EOF) return 37;
    if (vin("%d", &x) != EOF) return 39;
    if (getchar() != EOF) return 38;
    if (getchar_unlocked() != EOF) return 40;
    return 0;
}
