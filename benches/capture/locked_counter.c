/* No bug: the cost workload of benches/capture. Four threads add to
 * shared counters under a mutex and read a shared table between, long
 * enough (50 ms+ natively) that per-event costs dominate. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 200000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static long table[256];

static void *work(void *arg) {
    long me = (long)arg, local = 0;
    for (long i = 0; i < ROUNDS; i++) {
        for (int j = 0; j < 8; j++)
            local += table[(i + j + me) & 255];
        pthread_mutex_lock(&lock);
        counter++;
        table[i & 255] = local & 1023;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, work, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("%ld\n", counter);
    return counter != THREADS * ROUNDS;
}
