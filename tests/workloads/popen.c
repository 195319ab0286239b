/* Streams over pipes to commands (popen), as a program writes compressed output through
 * `gzip -c > FILE` or reads a command's output:
 *   popen("cat > OUT", "w"); 3 fwrites of 100 bytes ('w'); pclose
 *   popen("cat IN", "r"); one fread of up to 1000 bytes (IN's 50); pclose
 * Prints the bytes fread read.
 * usage: popen OUT IN */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 3) return 1;
    char cmd[4096], buf[1000];
    snprintf(cmd, sizeof cmd, "cat > %s", argv[1]);
    FILE *w = popen(cmd, "w");
    if (!w) return 2;
    memset(buf, 'w', 100);
    for (int i = 0; i < 3; i++)
        if (fwrite(buf, 1, 100, w) != 100) return 3;
    if (pclose(w) != 0) return 4;
    snprintf(cmd, sizeof cmd, "cat %s", argv[2]);
    FILE *r = popen(cmd, "r");
    if (!r) return 5;
    size_t n = fread(buf, 1, sizeof buf, r);
    if (pclose(r) != 0) return 6;
    printf("%zu\n", n);
    return 0;
}
