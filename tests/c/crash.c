/* A worker thread dies of SIGSEGV (or calls abort() with argument "abort")
 * while the other workers are busy taking a mutex. The crash is certain:
 * the crashing worker waits until the others have done some work. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKERS 3

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long shared;
static atomic_long progress;
static int use_abort;
static int *volatile nowhere;

static void *worker(void *arg) {
    (void)arg;
    for (long i = 0; i < 2000000; i++) {
        pthread_mutex_lock(&m);
        shared++;
        pthread_mutex_unlock(&m);
        atomic_fetch_add(&progress, 1);
    }
    return NULL;
}

static void *crasher(void *arg) {
    (void)arg;
    while (atomic_load(&progress) < 300) {
    }
    if (use_abort) abort();
    *nowhere = 42; /* SIGSEGV */
    return NULL;
}

int main(int argc, char **argv) {
    use_abort = argc > 1 && strcmp(argv[1], "abort") == 0;
    pthread_t t[WORKERS + 1];
    for (int i = 0; i < WORKERS; i++) pthread_create(&t[i], NULL, worker, NULL);
    pthread_create(&t[WORKERS], NULL, crasher, NULL);
    for (int i = 0; i <= WORKERS; i++) pthread_join(t[i], NULL);
    printf("not reached\n");
    return 0;
}
