/* Two threads share a counter under a mutex. Built with -DCHANGED it does
 * one more shared write per thread: replaying a recording of the original
 * with that binary must report a divergence. Usage: replay_diverge [N] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter, extra;
static long n = 50;

static void *worker(void *arg) {
    (void)arg;
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
#ifdef CHANGED
        if (i == n / 2) extra++;
#endif
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) n = atol(argv[1]);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("counter %ld extra %ld\n", counter, extra);
    return 0;
}
