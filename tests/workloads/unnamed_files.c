/* Files without a name, and a name that leads to another file by the time it is looked at:
 *   - fmemopen, then fprintf of 4 bytes; open_memstream, then fwrite of 9 bytes: streams in
 *     memory, with no fd (glibc's open_memstream leaves 0 where a stream keeps its fd);
 *   - open(DIR, O_TMPFILE | O_RDWR), then write of 7 bytes: a file with no name;
 *   - tmpfile(), then fwrite of 5 bytes: the same through stdio, in /tmp;
 *   - open("x"), write of 3 bytes, close, then "y" renamed over "x": the name "x" leads to
 *     another file from then on;
 * printing "tmp INO", "stdio INO" and "x INO" (the inodes of the last three files).
 *
 * usage: unnamed_files DIR */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned long inode_of(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

int main(int argc, char **argv) {
    if (argc != 2 || chdir(argv[1]) != 0) return 2;
    char buf[64];
    FILE *m = fmemopen(buf, sizeof buf, "w");
    if (!m || fprintf(m, "mem%d", 1) != 4 || fclose(m) != 0) return 3;
    char *text;
    size_t len;
    FILE *o = open_memstream(&text, &len);
    if (!o || fwrite("memstream", 1, 9, o) != 9 || fclose(o) != 0) return 4;
    free(text);
    int t = open(".", O_TMPFILE | O_RDWR, 0600);
    if (t < 0 || write(t, "tmpfile", 7) != 7) return 5;
    printf("tmp %lu\n", inode_of(t));
    if (close(t) != 0) return 6;
    FILE *s = tmpfile();
    if (!s || fwrite("stdio", 1, 5, s) != 5 || fflush(s) != 0) return 7;
    printf("stdio %lu\n", inode_of(fileno(s)));
    if (fclose(s) != 0) return 8;
    int x = open("x", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (x < 0 || write(x, "xxx", 3) != 3) return 9;
    printf("x %lu\n", inode_of(x));
    int y = open("y", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (close(x) != 0 || y < 0 || close(y) != 0 || rename("y", "x") != 0) return 10;
    return 0;
}
