/* Prints its argv, one environment variable and its own path as hex (any
 * bytes, UTF-8 or not) and the address of a stack variable, from a second
 * thread: replay must give it the very bytes, and the same stack. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int argc_g;
static char **argv_g;

static void hex(const char *label, const char *s) {
    printf("%s:", label);
    for (; s && *s; s++)
        printf("%02x", (unsigned char)*s);
    printf("\n");
}

static void *show(void *arg) {
    for (int i = 0; i < argc_g; i++)
        hex("arg", argv_g[i]);
    hex("env", getenv("RR_LITE_TEST_VAR"));
    printf("stack %p\n", arg);
    return NULL;
}

int main(int argc, char **argv) {
    int local = 0;
    argc_g = argc;
    argv_g = argv;
    pthread_t t;
    pthread_create(&t, NULL, show, &local);
    pthread_join(t, NULL);
    return 0;
}
