/* A process that opens a new file, writes a byte and ends at once: strata handles its calls
 * while it exits, or after.
 *
 * Usage: short_lived FILE
 */
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2)
        return 2;
    int fd = open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "x", 1) != 1)
        return 1;
    return close(fd);
}
