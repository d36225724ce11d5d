/* For `replay --debug`: two workers add to a total under a mutex; main
 * prints it and, given the argument "crash", then dereferences a pointer a
 * worker cleared. The marker comments name lines the test looks for. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;
static int value = 42;
static int *volatile target = &value;

static void add(long amount) {
    pthread_mutex_lock(&lock);
    total += amount; /* ADD LINE */
    pthread_mutex_unlock(&lock);
}

static void *worker(void *arg) {
    long me = (long)arg;
    for (int i = 0; i < 50; i++)
        add(me + 1);
    if (me == 1)
        target = NULL;
    return NULL;
}

int main(int argc, char **argv) {
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("total %ld\n", total);
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "crash") == 0)
        printf("value %d\n", *target); /* CRASH LINE */
    return 0;
}
