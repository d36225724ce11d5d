/* Four threads meet at one barrier per step, as SPLASH-style kernels do.
 * Around it they race: after the barrier each reads who left before it
 * (`last`, racy) and its neighbour's cell, which the neighbour may already
 * be rewriting for the next step. A thread descheduled on its way out of
 * the barrier logs its departure after the others' next arrivals.
 * usage: replay_barrier_steps [STEPS=200] */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4

static pthread_barrier_t b;
static long steps = 200;
static long cell[THREADS];
static volatile long last = -1;
static unsigned long hash[THREADS];

static void *worker(void *arg) {
    long id = (long)arg;
    for (long s = 0; s < steps; s++) {
        cell[id] = s * THREADS + id + (long)(hash[id] & 7);
        pthread_barrier_wait(&b);
        long seen = last;
        last = id;
        long next = cell[(id + 1) % THREADS];
        hash[id] = hash[id] * 31 + (unsigned long)(seen * 7 + next);
        for (long k = 0; k < (id + s) % 3; k++) sched_yield();
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) steps = atol(argv[1]);
    pthread_barrier_init(&b, NULL, THREADS);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&b);
    unsigned long h = 0;
    for (int i = 0; i < THREADS; i++) h = h * 1000003 + hash[i];
    printf("%lx\n", h);
    return 0;
}
