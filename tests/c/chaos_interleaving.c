/* Three threads append their number to a shared log under a mutex, with
 * some unlocked work between turns: the printed log is the interleaving
 * of their critical sections. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 3
#define ROUNDS 12

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char log_[THREADS * ROUNDS + 1];
static int used;
static volatile long sink[THREADS];

static void *worker(void *arg) {
    long me = (long)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&lock);
        log_[used++] = (char)('a' + me);
        pthread_mutex_unlock(&lock);
        for (int j = 0; j < 50; j++)
            sink[me] += j;
    }
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("%s\n", log_);
    return 0;
}
