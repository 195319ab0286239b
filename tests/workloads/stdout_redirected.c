/* stdout sent to files by dup2, as a program sends each rank's output to a log of its own:
 *   printf "start\n" to the stdout it was given; fflush
 *   A opened; dup2 onto fd 1; closed; printf "into-a\n"; fflush
 *   B opened; dup2 onto fd 1; closed; fflush (nothing buffered); fputs "into-b\n"; fflush
 * usage: stdout_redirected A B */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static int onto_stdout(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 1) != 1) return -1;
    return close(fd);
}

int main(int argc, char **argv) {
    if (argc != 3) return 1;
    printf("start\n");
    fflush(stdout);
    if (onto_stdout(argv[1])) return 2;
    printf("into-%c\n", 'a');
    fflush(stdout);
    if (onto_stdout(argv[2])) return 3;
    fflush(stdout);
    fputs("into-b\n", stdout);
    fflush(stdout);
    return 0;
}
