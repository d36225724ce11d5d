/* A worker thread dies of SIGSEGV (or calls abort() with the argument
 * "abort") while the other workers are busy taking a mutex. The crash is
 * certain: the crashing thread waits on a semaphore that a worker posts
 * after doing some work, and the workers have far more work than that. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKERS 3

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long shared;
static sem_t go;
static int use_abort;
static int *volatile nowhere;

static void *worker(void *arg) {
    long id = (long)arg;
    for (long i = 0; i < 2000000; i++) {
        pthread_mutex_lock(&m);
        shared++;
        pthread_mutex_unlock(&m);
        if (id == 0 && i == 200) sem_post(&go);
    }
    return NULL;
}

static void *crasher(void *arg) {
    (void)arg;
    sem_wait(&go);
    if (use_abort) abort();
    *nowhere = 42; /* SIGSEGV */
    return NULL;
}

int main(int argc, char **argv) {
    use_abort = argc > 1 && strcmp(argv[1], "abort") == 0;
    sem_init(&go, 0, 0);
    pthread_t t[WORKERS + 1];
    pthread_create(&t[WORKERS], NULL, crasher, NULL);
    for (long i = 0; i < WORKERS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i <= WORKERS; i++) pthread_join(t[i], NULL);
    printf("not reached\n");
    return 0;
}
