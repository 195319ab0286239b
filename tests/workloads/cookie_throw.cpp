/* A C++ exception thrown beneath a C library call and caught above it: the write function of
 * a stream made with fopencookie throws, through fwrite, to the try around the fwrite. Then a
 * write(2) of 6 bytes to DIR/after, so that a traced run has a call after the exception.
 * Prints "caught boom" and exits 0 when the exception arrived.
 *
 * usage: cookie_throw DIR */
#include <cstdio>
#include <stdexcept>
#include <string>

#include <fcntl.h>
#include <unistd.h>

static ssize_t throwing_write(void *, const char *, size_t) { throw std::runtime_error("boom"); }

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    cookie_io_functions_t io{};
    io.write = throwing_write;
    FILE *s = fopencookie(nullptr, "w", io);
    if (!s || setvbuf(s, nullptr, _IONBF, 0) != 0) return 3;
    try {
        fwrite("abc", 1, 3, s);
        std::puts("no exception");
        return 4;
    } catch (const std::exception &e) {
        std::printf("caught %s\n", e.what());
    }
    int fd = open((std::string(argv[1]) + "/after").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "after\n", 6) != 6 || close(fd) != 0) return 5;
    return 0;
}
