/* Barrier stencil: a 1-D three-point stencil over SIZE cells, each thread
 * owning a slice, two barriers per iteration (compute, copy back). Neighbours
 * read each other's edge cells across the barrier. Integer arithmetic: the
 * checksum is exact and checked against a serial run.
 * usage: stencil [SIZE=8192 cells] [THREADS=4] [ITERATIONS=20] */
#include "common.h"

static long size, threads, iterations;
static long *cur, *nxt;
static pthread_barrier_t barrier;

static void *worker(void *arg) {
    long id = (long)arg;
    long lo = 1 + id * size / threads, hi = 1 + (id + 1) * size / threads;
    for (long it = 0; it < iterations; it++) {
        for (long i = lo; i < hi; i++) nxt[i] = (cur[i - 1] + 2 * cur[i] + cur[i + 1]) % 1000003;
        pthread_barrier_wait(&barrier);
        for (long i = lo; i < hi; i++) cur[i] = nxt[i];
        pthread_barrier_wait(&barrier);
    }
    return NULL;
}

static long serial(void) {
    long *x = calloc((size_t)size + 2, sizeof *x), *y = calloc((size_t)size + 2, sizeof *y);
    if (!x || !y) exit(4);
    for (long i = 1; i <= size; i++) x[i] = i * 7 % 101;
    for (long it = 0; it < iterations; it++) {
        for (long i = 1; i <= size; i++) y[i] = (x[i - 1] + 2 * x[i] + x[i + 1]) % 1000003;
        for (long i = 1; i <= size; i++) x[i] = y[i];
    }
    long sum = 0;
    for (long i = 1; i <= size; i++) sum += x[i] * i;
    free(x);
    free(y);
    return sum;
}

int main(int argc, char **argv) {
    size = arg_or(argc, argv, 1, 8192, 1, 1L << 26);
    threads = arg_or(argc, argv, 2, 4, 1, MAX_THREADS);
    iterations = arg_or(argc, argv, 3, 20, 1, 1L << 20);
    cur = calloc((size_t)size + 2, sizeof *cur);
    nxt = calloc((size_t)size + 2, sizeof *nxt);
    if (!cur || !nxt) return 4;
    for (long i = 1; i <= size; i++) cur[i] = i * 7 % 101;
    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    run_threads((int)threads, worker);
    pthread_barrier_destroy(&barrier);
    long sum = 0;
    for (long i = 1; i <= size; i++) sum += cur[i] * i;
    printf("stencil size=%ld threads=%ld iterations=%ld checksum=%ld\n", size, threads, iterations,
           sum);
    long want = serial();
    free(cur);
    free(nxt);
    return sum == want ? 0 : 1;
}
