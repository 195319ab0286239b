/* Names as long as the kernel takes them (PATH_MAX, 4,096 bytes with the NUL): in DIR,
 * directories of up to 250 bytes each, nested (mkdir, chdir) until the working directory's
 * name is about 3,850 bytes long, then in it:
 *   - a file whose absolute name is 4,095 bytes, opened by that name, 1 byte written;
 *   - a file "r" opened by its relative name, 2 bytes written;
 *   - a stat of the first file by its absolute name;
 *   - an open of that name with one byte more, which fails with ENAMETOOLONG.
 *
 * usage: long_names DIR */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { TARGET = 3850 };

int main(int argc, char **argv) {
    if (argc != 2 || chdir(argv[1]) != 0) return 2;
    char cwd[PATH_MAX], name[256], path[PATH_MAX + 2];
    if (!getcwd(cwd, sizeof cwd)) return 3;
    size_t len = strlen(cwd);
    while (len < TARGET) {
        size_t c = TARGET - len < 250 ? TARGET - len : 250;
        memset(name, 'n', c);
        name[c] = 0;
        if (mkdir(name, 0755) != 0 || chdir(name) != 0) return 4;
        len += 1 + c;
    }
    if (!getcwd(cwd, sizeof cwd) || strlen(cwd) != len) return 5;
    /* cwd + "/" + file name = PATH_MAX - 1 bytes */
    size_t f = PATH_MAX - 1 - len - 1;
    memcpy(path, cwd, len);
    path[len] = '/';
    memset(path + len + 1, 'f', f);
    path[len + 1 + f] = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "1", 1) != 1 || close(fd) != 0) return 6;
    fd = open("r", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "22", 2) != 2 || close(fd) != 0) return 7;
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size != 1) return 8;
    strcat(path, "f");
    if (open(path, O_RDONLY) != -1 || errno != ENAMETOOLONG) return 9;
    return 0;
}
