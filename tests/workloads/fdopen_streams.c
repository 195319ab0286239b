/* Streams made over fds already used (fdopen), in FILE:
 *   fd F: 10 bytes written ("0123456789"), then fdopen(F, "r+") as S1: fputs "abc" (at 10),
 *         fflush (write(2) at 10)
 *   lseek F to 2; fdopen(dup(F), "r") as S2: fread 3 bytes ("234", at 2)
 *   fd A opened O_APPEND; fdopen(A, "w") as S3: fputs "xy" (to the end: no offset), fclose
 *   fclose S2, fclose S1
 * The file ends as "0123456789abcxy". usage: fdopen_streams FILE */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    int fd = open(argv[1], O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "0123456789", 10) != 10) return 3;
    FILE *s1 = fdopen(fd, "r+");
    if (!s1 || fputs("abc", s1) < 0 || fflush(s1)) return 4;
    if (lseek(fd, 2, SEEK_SET) != 2) return 5;
    FILE *s2 = fdopen(dup(fd), "r");
    char b[4] = {0};
    if (!s2 || fread(b, 1, 3, s2) != 3 || strcmp(b, "234")) return 6;
    int a = open(argv[1], O_WRONLY | O_APPEND);
    FILE *s3 = a < 0 ? NULL : fdopen(a, "w");
    if (!s3 || fputs("xy", s3) < 0 || fclose(s3)) return 7;
    if (fclose(s2) || fclose(s1)) return 8;
    return 0;
}
