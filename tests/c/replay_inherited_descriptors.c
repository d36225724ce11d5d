/* Prints the descriptor numbers its opens get: the lowest free ones, which
 * depend on the descriptors the program inherited (a shell's 3<file, a
 * harness's leak). Replay must give the recorded numbers whatever replay's
 * own caller left open. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
    int a = open("/dev/null", O_RDONLY);
    int b = dup(a);
    FILE *f = fopen("/dev/null", "r");
    printf("open %d dup %d fopen %d\n", a, b, f ? fileno(f) : -1);
    if (f) fclose(f);
    close(b);
    close(a);
    return 0;
}
