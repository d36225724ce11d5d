/* A barrier of 2 shared by 4 threads: each round lets whichever two
 * threads arrive first through, so rounds mix threads differently from run
 * to run, and in the log a round's arrivals interleave with the next
 * round's. A thread enters the barrier only with one of 2 * ROUNDS tickets,
 * so every round fills. Each thread records who left before it (racy
 * `last`). usage: replay_barrier_pairs [ROUNDS=100] */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4

static pthread_barrier_t b;
static long rounds = 100;
static volatile long last = -1;
static unsigned long hash[THREADS];
static int serial[THREADS];

static long tickets;

static void *worker(void *arg) {
    long id = (long)arg;
    for (long r = 0; __atomic_fetch_add(&tickets, 1, __ATOMIC_RELAXED) < 2 * rounds; r++) {
        if (pthread_barrier_wait(&b) == PTHREAD_BARRIER_SERIAL_THREAD) serial[id]++;
        long seen = last;
        last = id;
        hash[id] = hash[id] * 31 + (unsigned long)(seen + 2);
        for (long k = 0; k < (id * 7 + r) % 3; k++) sched_yield();
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) rounds = atol(argv[1]);
    pthread_barrier_init(&b, NULL, 2);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&b);
    unsigned long h = 0;
    for (int i = 0; i < THREADS; i++) h = h * 1000003 + hash[i] + (unsigned long)serial[i];
    printf("%lx\n", h);
    return 0;
}
