/* Threads append their id to a shared log under a mutex; the order of the
 * log is the order in which they took the mutex. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 12

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static char log_[THREADS * ROUNDS + 1];
static int n;

static void *worker(void *arg) {
    long id = (long)arg;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_mutex_lock(&m);
        log_[n++] = (char)('a' + id);
        pthread_mutex_unlock(&m);
        sched_yield();
    }
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    printf("order %s\n", log_);
    return 0;
}
