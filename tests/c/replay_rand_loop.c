/* Random numbers and clock readings in bulk: main fills an array from
 * drand48 alone (as SPLASH's FFT fills its input), reading the clock every
 * 100 numbers, then three threads draw from the shared lrand48 generator at
 * once, so which thread gets which number differs from run to run.
 * usage: replay_rand_loop [N=20000] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define THREADS 3

static long n = 20000;
static long sums[THREADS];

static void *worker(void *arg) {
    long id = (long)arg;
    for (long i = 0; i < 200; i++) sums[id] += lrand48() % 1000;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) n = atol(argv[1]);
    double *x = malloc((size_t)n * sizeof *x);
    if (!x) return 2;
    srand48(12345);
    long ticks = 0;
    for (long i = 0; i < n; i++) {
        x[i] = drand48();
        if (i % 100 == 0) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ticks += ts.tv_nsec & 1;
        }
    }
    double total = 0;
    for (long i = 0; i < n; i++) total += x[i];
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    printf("total %.6f ticks %ld sums %ld %ld %ld\n", total, ticks, sums[0], sums[1], sums[2]);
    free(x);
    return 0;
}
