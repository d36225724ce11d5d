/* main calls exit(3) while its worker threads are still running (they
 * never finish on their own). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define WORKERS 3

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long shared;
static atomic_long progress;

static void *worker(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&m);
        shared++;
        pthread_mutex_unlock(&m);
        atomic_fetch_add(&progress, 1);
    }
    return NULL;
}

int main(void) {
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++) pthread_create(&t[i], NULL, worker, NULL);
    while (atomic_load(&progress) < 500) {
    }
    printf("exiting early\n");
    fflush(stdout);
    exit(3);
}
