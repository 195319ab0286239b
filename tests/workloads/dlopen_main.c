/* Loads LIB with dlopen, waits WAIT_MS, then calls its stt_write 5 times on FILE (5 bytes each).
 * usage: dlopen_main LIB FILE WAIT_MS */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 3; }
    ssize_t (*f)(int, const void *, size_t) = (ssize_t (*)(int, const void *, size_t))dlsym(h, "stt_write");
    if (!f) return 4;
    usleep(atoi(argv[3]) * 1000);
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 5; i++)
        if (f(fd, "hello", 5) != 5) return 5;
    close(fd);
    return 0;
}
