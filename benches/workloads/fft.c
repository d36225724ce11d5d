/* FFT-like: a radix-2 number-theoretic transform (the FFT's butterflies and
 * bit-reversal, over integers modulo the prime 998244353 so the result is
 * exact) of 2^LOG2N values, the butterflies of each stage dealt out in
 * slices, a barrier between stages. Every round transforms forward and
 * back; the check is that the input comes back.
 * usage: fft [LOG2N=16] [THREADS=4] [ROUNDS=1] */
#include "common.h"

#define P MOD_P
#define G 3u

static long log2n, n, threads, rounds;
static uint32_t *data, *roots, *inverse_roots;
static unsigned long forward_checksum;
static pthread_barrier_t barrier;

static long reverse_bits(long i) {
    long r = 0;
    for (long b = 0; b < log2n; b++) r |= ((i >> b) & 1) << (log2n - 1 - b);
    return r;
}

/* One transform with this thread's share of every stage. */
static void transform(long id, const uint32_t *w) {
    long lo = id * n / threads, hi = (id + 1) * n / threads;
    for (long i = lo; i < hi; i++) {
        long r = reverse_bits(i);
        if (i < r) {
            uint32_t t = data[i];
            data[i] = data[r];
            data[r] = t;
        }
    }
    pthread_barrier_wait(&barrier);
    long half_n = n / 2, blo = id * half_n / threads, bhi = (id + 1) * half_n / threads;
    for (long len = 2; len <= n; len <<= 1) {
        long half = len / 2, step = n / len;
        for (long b = blo; b < bhi; b++) {
            long j = b % half, i0 = (b / half) * len + j, i1 = i0 + half;
            uint32_t u = data[i0], v = mod_mul(data[i1], w[j * step]);
            data[i0] = u + v >= P ? u + v - P : u + v;
            data[i1] = u >= v ? u - v : u + P - v;
        }
        pthread_barrier_wait(&barrier);
    }
}

static void *worker(void *arg) {
    long id = (long)arg;
    uint32_t n_inverse = mod_pow((uint32_t)n, P - 2);
    long lo = id * n / threads, hi = (id + 1) * n / threads;
    for (long round = 0; round < rounds; round++) {
        transform(id, roots);
        if (id == 0 && round == 0)
            for (long i = 0; i < n; i++) forward_checksum += (unsigned long)data[i] * (unsigned long)(i + 1);
        pthread_barrier_wait(&barrier);
        transform(id, inverse_roots);
        for (long i = lo; i < hi; i++) data[i] = mod_mul(data[i], n_inverse);
        pthread_barrier_wait(&barrier);
    }
    return NULL;
}

int main(int argc, char **argv) {
    log2n = arg_or(argc, argv, 1, 16, 1, 23);
    threads = arg_or(argc, argv, 2, 4, 1, MAX_THREADS);
    rounds = arg_or(argc, argv, 3, 1, 1, 1L << 20);
    n = 1L << log2n;
    data = malloc((size_t)n * sizeof *data);
    roots = malloc((size_t)n / 2 * sizeof *roots);
    inverse_roots = malloc((size_t)n / 2 * sizeof *inverse_roots);
    if (!data || !roots || !inverse_roots) return 4;
    uint32_t w = mod_pow(G, (P - 1) / (uint64_t)n), wi = mod_pow(w, P - 2);
    roots[0] = inverse_roots[0] = 1;
    for (long i = 1; i < n / 2; i++) {
        roots[i] = mod_mul(roots[i - 1], w);
        inverse_roots[i] = mod_mul(inverse_roots[i - 1], wi);
    }
    for (long i = 0; i < n; i++) data[i] = (uint32_t)((i * 2654435761u) % P);
    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    run_threads((int)threads, worker);
    pthread_barrier_destroy(&barrier);
    int ok = 1;
    for (long i = 0; i < n; i++) ok &= data[i] == (uint32_t)((i * 2654435761u) % P);
    printf("fft log2n=%ld threads=%ld rounds=%ld checksum=%lu\n", log2n, threads, rounds,
           forward_checksum);
    free(data);
    free(roots);
    free(inverse_roots);
    return ok ? 0 : 1;
}
