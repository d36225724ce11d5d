/* LU-like: Gaussian elimination without pivoting of an N x N matrix over the
 * integers modulo the prime 998244353 (exact), rows dealt round-robin to the
 * threads as in SPLASH-2's LU, one barrier per elimination step: every
 * thread reads the pivot row and updates its own rows below it. The check
 * multiplies a vector by A and by L*U.
 * usage: lu [N=128] [THREADS=4] */
#include "common.h"

#define P MOD_P

static long n, threads;
static uint32_t *a;
static int zero_pivot;
static pthread_barrier_t barrier;

static void *worker(void *arg) {
    long id = (long)arg;
    for (long k = 0; k < n - 1; k++) {
        uint32_t pivot = a[k * n + k];
        if (pivot == 0) {
            zero_pivot = 1; /* every thread sees it: all stop at the same step */
            break;
        }
        uint32_t inverse = mod_pow(pivot, P - 2);
        long first = k + 1 + ((id - (k + 1)) % threads + threads) % threads;
        for (long i = first; i < n; i += threads) {
            uint32_t l = mod_mul(a[i * n + k], inverse);
            a[i * n + k] = l;
            for (long j = k + 1; j < n; j++)
                a[i * n + j] = (a[i * n + j] + P - mod_mul(l, a[k * n + j])) % P;
        }
        pthread_barrier_wait(&barrier);
    }
    return NULL;
}

/* y = A x for the original matrix, z = L (U x) for the factors in `a`. */
static int check(const uint32_t *original) {
    uint32_t *x = malloc((size_t)n * sizeof *x), *ux = malloc((size_t)n * sizeof *ux);
    if (!x || !ux) exit(4);
    for (long i = 0; i < n; i++) x[i] = (uint32_t)(i * 7919 % P);
    for (long i = 0; i < n; i++) {
        uint64_t s = 0;
        for (long j = i; j < n; j++) s = (s + mod_mul(a[i * n + j], x[j])) % P;
        ux[i] = (uint32_t)s;
    }
    int ok = 1;
    for (long i = 0; i < n; i++) {
        uint64_t lu = ux[i], ax = 0;
        for (long j = 0; j < i; j++) lu = (lu + mod_mul(a[i * n + j], ux[j])) % P;
        for (long j = 0; j < n; j++) ax = (ax + mod_mul(original[i * n + j], x[j])) % P;
        ok &= lu == ax;
    }
    free(x);
    free(ux);
    return ok;
}

int main(int argc, char **argv) {
    n = arg_or(argc, argv, 1, 128, 2, 8192);
    threads = arg_or(argc, argv, 2, 4, 1, MAX_THREADS);
    a = malloc((size_t)(n * n) * sizeof *a);
    uint32_t *original = malloc((size_t)(n * n) * sizeof *original);
    if (!a || !original) return 4;
    uint64_t seed = 88172645463325252u;
    for (long i = 0; i < n * n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        a[i] = original[i] = (uint32_t)(seed % P);
    }
    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    run_threads((int)threads, worker);
    pthread_barrier_destroy(&barrier);
    unsigned long sum = 0;
    for (long i = 0; i < n; i++) sum = sum * 31 + a[i * n + i];
    printf("lu n=%ld threads=%ld checksum=%lu\n", n, threads, sum);
    int ok = !zero_pivot && check(original);
    free(a);
    free(original);
    return ok ? 0 : 1;
}
