/* A racy "first to finish": each thread does some work, then tries to take
 * the winner mutex, which is never released; the first to get it wins.
 * Meanwhile threads spin on trylock of a second mutex and count failures. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#define THREADS 3

static pthread_mutex_t winner_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t busy_m = PTHREAD_MUTEX_INITIALIZER;
static long winner = -1;
static long fails[THREADS];
static long work;

static void *worker(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < 20; i++) {
        while (pthread_mutex_trylock(&busy_m) != 0) {
            fails[id]++;
            sched_yield();
        }
        work++;
        if (i % 2 == 0) sched_yield();
        pthread_mutex_unlock(&busy_m);
    }
    if (pthread_mutex_trylock(&winner_m) == 0) winner = id;
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    printf("winner %ld work %ld fails", winner, work);
    for (int i = 0; i < THREADS; i++) printf(" %ld", fails[i]);
    printf("\n");
    return 0;
}
