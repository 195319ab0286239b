/* Names that are not UTF-8 (Linux names are bytes): a directory "d\xff" and in it, after a
 * chdir there, a file "f\xfe.dat" opened by a relative name, 5 bytes written to it.
 *
 * usage: odd_names DIR */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/d\xff", argv[1]);
    if (mkdir(dir, 0755) != 0 || chdir(dir) != 0) return 3;
    int fd = open("f\xfe.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "hello", 5) != 5 || close(fd) != 0) return 4;
    return 0;
}
