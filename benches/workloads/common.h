/* Shared by the replay_speed workloads: argument parsing and thread start.
 * Every workload is `prog SIZE THREADS [EXTRA]`, prints one checksum line
 * and exits 0 when its own check holds. */
#ifndef RR_LITE_BENCH_COMMON_H
#define RR_LITE_BENCH_COMMON_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_THREADS 64

static long arg_or(int argc, char **argv, int i, long dflt, long lo, long hi) {
    long v = argc > i ? strtol(argv[i], NULL, 10) : dflt;
    if (v < lo || v > hi) {
        fprintf(stderr, "%s: argument %d must be in [%ld, %ld]\n", argv[0], i, lo, hi);
        exit(2);
    }
    return v;
}

/* Arithmetic modulo the prime 998244353 (fft, lu): exact results. */
#define MOD_P 998244353u

static inline uint32_t mod_mul(uint32_t a, uint32_t b) { return (uint32_t)((uint64_t)a * b % MOD_P); }

static inline uint32_t mod_pow(uint32_t b, uint64_t e) {
    uint32_t r = 1;
    for (; e; e >>= 1, b = mod_mul(b, b))
        if (e & 1) r = mod_mul(r, b);
    return r;
}

static void run_threads(int n, void *(*fn)(void *)) {
    pthread_t t[MAX_THREADS];
    for (long i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, fn, (void *)i) != 0) {
            perror("pthread_create");
            exit(3);
        }
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

#endif
