/* Writes to its stdout as a job writes its log when the shell sends it to a file
 * (`job > out.txt`, `job >> out.txt`): three lines through stdio ("one\n" "two\n" "three\n",
 * 14 bytes), fflush, then "raw\n" through write(2) on fd 1.
 * With `close`, as a command that prints nothing through stdio does at its exit (coreutils'
 * close_stdout): "raw\n" through write(2) on fd 1, then fclose(stdout), its first stdio call
 * on stdout, which closes fd 1.
 * usage: stdout_lines [close]     (stdout: a file) */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "close") == 0) {
        if (write(1, "raw\n", 4) != 4) return 3;
        return fclose(stdout) ? 4 : 0;
    }
    const char *words[] = {"one", "two", "three"};
    for (int i = 0; i < 3; i++)
        if (printf("%s\n", words[i]) != (int)strlen(words[i]) + 1) return 1;
    if (fflush(stdout)) return 2;
    if (write(1, "raw\n", 4) != 4) return 3;
    return 0;
}
