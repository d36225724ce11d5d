/* Threads bump a shared int without any lock: a data race on purpose.
 * Each increment is one 4-byte read and one 4-byte write of `counter` (the
 * empty asm keeps the compiler from merging iterations), so the final value
 * can be recomputed from the recorded global order.
 * Usage: racy_counter [THREADS] [ITERATIONS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int counter;

static void *bump(void *arg) {
    long n = (long)arg;
    for (long i = 0; i < n; i++) {
        counter++;
        __asm__ volatile("" ::: "memory");
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    long iterations = argc > 2 ? atol(argv[2]) : 2000;
    if (threads < 1 || threads > 64 || iterations < 1) return 2;
    pthread_t t[64];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, bump, (void *)iterations) != 0) return 3;
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("counter %p %d of %ld\n", (void *)&counter, counter, threads * iterations);
    return counter >= 1 && counter <= threads * iterations ? 0 : 1;
}
