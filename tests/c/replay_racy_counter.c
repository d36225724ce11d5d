/* Lost updates: threads bump a shared counter without a lock, with a call
 * to an (instrumented) function between the read and the write, so the
 * final value depends on the interleaving.
 * Usage: replay_racy_counter [THREADS] [ITERATIONS] */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

static volatile long counter;
static volatile long private_work[16];

__attribute__((noinline)) static void between(long id, long i) {
    private_work[id] += i;
    if (i % 4 == (id & 3)) sched_yield();
}

static void *bump(void *arg) {
    long id = (long)arg;
    for (long i = 0; i < 200; i++) {
        long v = counter;
        between(id, i);
        counter = v + 1;
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 3;
    if (threads < 1 || threads > 16) return 2;
    pthread_t t[16];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, bump, (void *)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("counter %ld of %d\n", counter, threads * 200);
    return 0;
}
