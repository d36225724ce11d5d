/* Read-shared data: C = A x B with the rows of C dealt round-robin to the
 * threads. A and B are written by main before the threads start and then
 * only read by everyone (reads after one write need no order among
 * themselves); each row of C is written by one thread.
 * usage: matmul [SIZE=64 (N of the NxN matrices)] [THREADS=4] */
#include "common.h"

static long n, threads;
static long *a, *b, *c;

static void *worker(void *arg) {
    long id = (long)arg;
    for (long i = id; i < n; i += threads)
        for (long j = 0; j < n; j++) {
            long s = 0;
            for (long k = 0; k < n; k++) s += a[i * n + k] * b[k * n + j];
            c[i * n + j] = s;
        }
    return NULL;
}

int main(int argc, char **argv) {
    n = arg_or(argc, argv, 1, 64, 1, 4096);
    threads = arg_or(argc, argv, 2, 4, 1, MAX_THREADS);
    a = malloc((size_t)(n * n) * sizeof *a);
    b = malloc((size_t)(n * n) * sizeof *b);
    c = malloc((size_t)(n * n) * sizeof *c);
    if (!a || !b || !c) return 4;
    for (long i = 0; i < n * n; i++) {
        a[i] = i % 17 - 8;
        b[i] = (i * 7) % 13 - 6;
    }
    run_threads((int)threads, worker);
    long sum = 0, want = 0;
    for (long i = 0; i < n * n; i++) sum += c[i] * (i % 5 + 1);
    for (long i = 0; i < n; i++) /* check one column serially */
    {
        long s = 0;
        for (long k = 0; k < n; k++) s += a[i * n + k] * b[k * n + n / 2];
        want += s == c[i * n + n / 2];
    }
    printf("matmul n=%ld threads=%ld checksum=%ld\n", n, threads, sum);
    free(a);
    free(b);
    free(c);
    return want == n ? 0 : 1;
}
