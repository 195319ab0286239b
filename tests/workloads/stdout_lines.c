/* Writes to its stdout as a job writes its log when the shell sends it to a file
 * (`job > out.txt`, `job >> out.txt`): three lines through stdio ("one\n" "two\n" "three\n",
 * 14 bytes), fflush, then "raw\n" through write(2) on fd 1.
 * usage: stdout_lines     (stdout: a file) */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void) {
    const char *words[] = {"one", "two", "three"};
    for (int i = 0; i < 3; i++)
        if (printf("%s\n", words[i]) != (int)strlen(words[i]) + 1) return 1;
    if (fflush(stdout)) return 2;
    if (write(1, "raw\n", 4) != 4) return 3;
    return 0;
}
