/* A function returning a double, called as if it returned an int: what
 * the caller gets is whatever `rax` holds when the function returns, which
 * is what its last hook left there (NPB IS calls its `timer_read`
 * undeclared, and printed another time at every replay). rr-lite's access
 * hooks leave the same in `rax` in every mode, so the program prints the
 * same number at record and replay. Undefined behaviour, on purpose. */
#include <stdio.h>

double elapsed[4];

double timer_read(int n) {
    return elapsed[n];
}

typedef int (*as_int)(int);

int main(int argc, char **argv) {
    (void)argv;
    as_int volatile read_as_int = (as_int)(void (*)(void))timer_read;
    printf("t = %d\n", read_as_int(argc - 1));
    return 0;
}
