/* Streams whose functions are the program's own (fopencookie), each unbuffered:
 *   - one writing through write(2) to DIR/through: fwrite of 5 bytes ("hello"), then fclose;
 *   - one whose write function throws a C++ exception, through fwrite of 3 bytes, to the try
 *     around the fwrite;
 * then a write(2) of 6 bytes to DIR/after, so that a traced run has a call after the
 * exception. Prints "caught boom" and exits 0 when the exception arrived.
 *
 * usage: cookie_throw DIR */
#include <cstdio>
#include <stdexcept>
#include <string>

#include <fcntl.h>
#include <unistd.h>

static ssize_t fd_write(void *fd, const char *buf, size_t n) { return write(*(int *)fd, buf, n); }

static ssize_t throwing_write(void *, const char *, size_t) { throw std::runtime_error("boom"); }

static FILE *unbuffered(void *cookie, cookie_io_functions_t io) {
    FILE *s = fopencookie(cookie, "w", io);
    if (s && setvbuf(s, nullptr, _IONBF, 0) != 0) return nullptr;
    return s;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    std::string dir = argv[1];
    int fd = open((dir + "/through").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cookie_io_functions_t through{};
    through.write = fd_write;
    FILE *t = fd < 0 ? nullptr : unbuffered(&fd, through);
    if (!t || fwrite("hello", 1, 5, t) != 5 || fclose(t) != 0 || close(fd) != 0) return 3;
    cookie_io_functions_t io{};
    io.write = throwing_write;
    FILE *s = unbuffered(nullptr, io);
    if (!s) return 3;
    try {
        fwrite("abc", 1, 3, s);
        std::puts("no exception");
        return 4;
    } catch (const std::exception &e) {
        std::printf("caught %s\n", e.what());
    }
    fd = open((dir + "/after").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "after\n", 6) != 6 || close(fd) != 0) return 5;
    return 0;
}
