/* main calls exit(3) while its worker threads are still running (they never
 * finish on their own). By default main waits until every worker has
 * started and done some work; with the argument "now" it exits right after
 * creating them, while they may still be starting up. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKERS 3

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long shared;
static sem_t working;

static void *worker(void *arg) {
    (void)arg;
    for (long i = 0;; i++) {
        pthread_mutex_lock(&m);
        shared++;
        pthread_mutex_unlock(&m);
        if (i == 100) sem_post(&working);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int now = argc > 1 && strcmp(argv[1], "now") == 0;
    sem_init(&working, 0, 0);
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++) pthread_create(&t[i], NULL, worker, NULL);
    if (!now)
        for (int i = 0; i < WORKERS; i++) sem_wait(&working);
    printf("exiting early\n");
    fflush(stdout);
    exit(3);
}
