/* Eight threads each take a mutex, increment a counter, release it, print
 * the value they saw and end with pthread_exit (which unwinds the thread's
 * stack through libgcc_s, loaded by glibc on first use). */
#include <pthread.h>
#include <stdio.h>

#define THREADS 8

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int counter;

static void *worker(void *arg) {
    long id = (long)arg;
    pthread_mutex_lock(&m);
    int seen = ++counter;
    pthread_mutex_unlock(&m);
    printf("thread %ld saw %d\n", id, seen);
    pthread_exit(NULL);
}

int main(void) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    printf("counter %d\n", counter);
    return 0;
}
