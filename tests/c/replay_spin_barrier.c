/* A spin-then-block barrier in the manner of PARSEC's (unsynchronised
 * polling of a flag, then a trylock loop, then a condition variable),
 * written here from its description: four threads with unequal work meet
 * at it every round, so the early ones spin. Prints a checksum of the work.
 * usage: replay_spin_barrier [ROUNDS=100] [WORK=20000] */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define SPIN_MAX 35000

static struct {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    volatile int waiting, arrival;
} bar = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 1};
static long rounds, work;
static double sums[THREADS];

/* Spins on the flag while it is `phase`, then takes the mutex by trying. */
static void spin_then_lock(int phase) {
    pthread_mutex_unlock(&bar.mutex);
    volatile long polls = 0;
    while (bar.arrival == phase && polls < SPIN_MAX) polls++;
    while (pthread_mutex_trylock(&bar.mutex) == EBUSY) {
    }
    while (bar.arrival == phase) pthread_cond_wait(&bar.cond, &bar.mutex);
}

static void barrier_wait(void) {
    pthread_mutex_lock(&bar.mutex);
    if (!bar.arrival) spin_then_lock(0);
    if (++bar.waiting == THREADS) {
        bar.arrival = 0;
        pthread_cond_broadcast(&bar.cond);
    } else if (bar.arrival) {
        spin_then_lock(1);
    }
    if (--bar.waiting == 0) {
        bar.arrival = 1;
        pthread_cond_broadcast(&bar.cond);
    }
    pthread_mutex_unlock(&bar.mutex);
}

static void *worker(void *arg) {
    long id = (long)arg;
    double x = 0;
    for (long r = 0; r < rounds; r++) {
        for (long k = 0; k < work * (id + 1); k++) x += (double)(k % 7) * 0.5;
        barrier_wait();
    }
    sums[id] = x;
    return NULL;
}

int main(int argc, char **argv) {
    rounds = argc > 1 ? atol(argv[1]) : 100;
    work = argc > 2 ? atol(argv[2]) : 20000;
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&threads[t], NULL, worker, (void *)t);
    for (long t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
    printf("spin barrier: %ld rounds, checksum %.1f\n", rounds,
           sums[0] + sums[1] + sums[2] + sums[3]);
    return 0;
}
