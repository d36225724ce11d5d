/* A crash inside a library call, as a use-after-free bug makes one: two
 * threads race on a counter, the result is printed, then a worker calls
 * pthread_mutex_trylock (argv[1] = "trylock") or memcpy ("memcpy") on a
 * null pointer. The recording ends in the crash inside the call, before
 * the call's own event: replay must crash there too. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static long counter;
static pthread_mutex_t *volatile broken;
static char *volatile nowhere;

static void *work(void *arg) {
    for (int i = 0; i < 20000; i++) counter++;
    return arg;
}

static size_t copy_size = 16;

static void *crash(void *arg) {
    const char *how = arg;
    char buf[64];
    if (strcmp(how, "trylock") == 0) pthread_mutex_trylock(broken);
    else memcpy(buf, nowhere, copy_size);
    printf("%d\n", buf[0]);
    return NULL;
}

int main(int argc, char **argv) {
    pthread_t a, b, c;
    pthread_create(&a, NULL, work, NULL);
    pthread_create(&b, NULL, work, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("counter %ld\n", counter);
    fflush(stdout);
    copy_size = (size_t)argc * 16;
    pthread_create(&c, NULL, crash, argc > 1 ? argv[1] : "trylock");
    pthread_join(c, NULL);
    return 0;
}
