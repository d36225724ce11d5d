/* A worker dies of SIGSEGV (or abort() with the argument "abort") after
 * racing with the other workers on a shared counter; the crash itself is
 * certain, what the others did before it is not. */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>

static volatile long shared;
static sem_t go;
static int use_abort;
static int *volatile nowhere;

static void *worker(void *arg) {
    long id = (long)arg;
    for (long i = 0; i < 100000; i++) {
        shared++;
        if (i % 8 == 0) sched_yield();
        if (id == 0 && i == 50) sem_post(&go);
    }
    return NULL;
}

static void *crasher(void *arg) {
    (void)arg;
    sem_wait(&go);
    shared += 1000;
    if (use_abort) abort();
    *nowhere = (int)shared; /* SIGSEGV */
    return NULL;
}

int main(int argc, char **argv) {
    use_abort = argc > 1 && strcmp(argv[1], "abort") == 0;
    sem_init(&go, 0, 0);
    pthread_t t[3];
    pthread_create(&t[2], NULL, crasher, NULL);
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    return 0;
}
