/* A random sequence of stdio calls on one stream, the same for a seed: writes (fwrite,
 * fwrite_unlocked, fputc, putc, fputs, fprintf), reads (fread, fgetc, getc, fgets, getline,
 * fscanf of a number, ungetc of the character read), seeks (fseeko from the start, the current
 * position and the end; fseek; rewind; fgetpos, then now and then fsetpos back after a seek)
 * and fflush, fully buffered through a buffer of a size the seed picks, line buffered, or
 * unbuffered (setvbuf), with a flush or seek between a write and a read as C asks. With LOG,
 * each call's line is written there: its name, ftello before and after it, and what it
 * returned (for fgets the length of the string, for fscanf the fields it matched, for a seek 0
 * or -1 where it failed). The ftello calls are made only then, so that a traced run without
 * LOG makes the same calls with no position asked of the library.
 * usage: stdio_random SEED N FILE [LOG] */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seeded.h"

static FILE *f, *logf;
static char line[64];
static long long before;

static void begin(void) {
    if (logf) before = ftello(f);
}

static void end(const char *name, long long result) {
    if (logf) fprintf(logf, "%s %lld %lld %lld\n", name, before, (long long)ftello(f), result);
}

/* What a seek that returned `r` logs: 0, or -1 where it failed. */
static long long after(int r) {
    return r ? -1 : 0;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) return 1;
    seed_with(strtoull(argv[1], NULL, 10));
    long n = strtol(argv[2], NULL, 10);
    f = fopen(argv[3], "w+");
    if (!f) return 2;
    if (argc == 5 && !(logf = fopen(argv[4], "w"))) return 3;
    static const size_t buffers[] = {16, 100, 512, 4096};
    static char buffer[4096];
    static const int modes[] = {_IOFBF, _IOLBF, _IONBF};
    int mode = modes[pick(3)];
    if (setvbuf(f, mode == _IONBF ? NULL : buffer, mode, buffers[pick(4)])) return 4;
    char data[512], back[512];
    for (int i = 0; i < (int)sizeof data; i++) data[i] = i % 37 == 36 ? '\n' : 'a' + i % 26;
    char *got = NULL;
    size_t cap = 0;
    int writing = 0, reading = 0;
    for (long i = 0; i < n; i++) {
        long op = pick(19);
        long k = 1 + pick(300);
        if ((op < 4 || op == 14 || op == 15) && reading) {
            /* A write after a read: C asks for a seek between them. */
            begin();
            end("fseeko", after(fseeko(f, 0, SEEK_CUR)));
            reading = 0;
        } else if (((op >= 4 && op < 9) || op == 16 || op == 17) && writing) {
            begin();
            end("fflush", fflush(f));
            writing = 0;
        }
        switch (op) {
        case 0:
            begin();
            end("fwrite", (long long)fwrite(data + pick(200), 1, k, f));
            break;
        case 1:
            begin();
            end("fputc", fputc('A' + pick(26), f) == EOF ? -1 : 1);
            break;
        case 2: {
            long at = pick(200);
            char s[64];
            long len = 1 + pick(50);
            memcpy(s, data + at, len);
            s[len] = 0;
            begin();
            end("fputs", fputs(s, f) == EOF ? -1 : (long long)strlen(s));
            break;
        }
        case 3:
            begin();
            end("fprintf", fprintf(f, "%0*ld\n", (int)pick(40), i));
            break;
        case 4:
            begin();
            end("fread", (long long)fread(back, 1, k, f));
            break;
        case 5:
            begin();
            end("fgetc", fgetc(f) == EOF ? 0 : 1);
            break;
        case 6:
            begin();
            end("fgets", fgets(line, 1 + pick(sizeof line - 1), f) ? (long long)strlen(line) : 0);
            break;
        case 7: {
            begin();
            ssize_t r = getline(&got, &cap, f);
            end("getline", r < 0 ? 0 : r);
            break;
        }
        case 8: {
            begin();
            int c = fgetc(f);
            end("fgetc", c == EOF ? 0 : 1);
            if (c != EOF) {
                begin();
                end("ungetc", ungetc(c, f) == EOF ? -1 : 0);
            }
            break;
        }
        case 9:
        case 10:
        case 11: {
            int whence = op == 9 ? SEEK_SET : op == 10 ? SEEK_CUR : SEEK_END;
            long long to = whence == SEEK_SET ? pick(2000) : -pick(whence == SEEK_CUR ? 20 : 300);
            begin();
            end("fseeko", after(fseeko(f, to, whence)));
            break;
        }
        case 12:
            begin();
            rewind(f);
            end("rewind", 0);
            break;
        case 14:
            begin();
            end("putc", putc('x', f) == EOF ? -1 : 1);
            break;
        case 15:
            begin();
            end("fwrite_unlocked", (long long)fwrite_unlocked(data, 1, k, f));
            break;
        case 16: {
            int v;
            begin();
            end("fscanf", fscanf(f, "%d", &v));
            break;
        }
        case 17:
            begin();
            end("getc", getc(f) == EOF ? 0 : 1);
            break;
        case 18: {
            fpos_t p;
            begin();
            end("fgetpos", fgetpos(f, &p));
            if (pick(2)) {
                begin();
                end("fseek", fseek(f, pick(1500), SEEK_SET));
                begin();
                end("fsetpos", fsetpos(f, &p));
            }
            break;
        }
        default:
            begin();
            end("fflush", fflush(f));
            break;
        }
        if (op < 4 || op == 14 || op == 15) writing = 1, reading = 0;
        else if (op < 9 || op == 16 || op == 17) reading = 1, writing = 0;
        else writing = reading = 0;
    }
    free(got);
    return fclose(f) ? 5 : 0;
}
