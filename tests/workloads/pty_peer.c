/* A descriptor strata never sees made: a pseudo-terminal's peer, returned by the TIOCGPTPEER
 * ioctl, which glibc's openpty uses and which the ioctl probe does not record (Open MPI's
 * mpirun makes each rank's stdout so, and the rank dup2s it to fd 1).
 *   posix_openpt(O_RDWR | O_NOCTTY), grantpt, unlockpt
 *   ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY): the peer
 *   dup2(peer, 10); close(peer): fd 10 is the only one on the peer
 *   write(10, "strata\n", 7)
 *   sleep(2), so that the fd is still open while strata names it (as a rank's fd 1 is)
 *   close(10)
 * Writes the peer's name (ptsname) and inode to LOG: "NAME INO".
 * usage: pty_peer LOG */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) return 1;
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) || unlockpt(master)) return 2;
    int peer = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY);
    if (peer < 0) return 3;
    if (dup2(peer, 10) != 10 || close(peer)) return 4;
    if (write(10, "strata\n", 7) != 7) return 5;
    struct stat st;
    if (fstat(10, &st)) return 6;
    FILE *log = fopen(argv[1], "w");
    if (!log) return 7;
    fprintf(log, "%s %lu\n", ptsname(master), (unsigned long)st.st_ino);
    fclose(log);
    sleep(2);
    close(10);
    return 0;
}
