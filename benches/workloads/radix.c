/* Radix sort: SIZE 32-bit keys, four passes of 8 bits. Each pass every
 * thread counts the digits of its slice, a barrier, each computes where its
 * keys go from everyone's counts, scatters them, a barrier. The check:
 * sorted, with the keys' sum and xor unchanged.
 * usage: radix [SIZE=262144] [THREADS=4] */
#include <stdint.h>

#include "common.h"

#define DIGITS 256

static long size, threads;
static uint32_t *keys, *spare;
static long counts[MAX_THREADS][DIGITS];
static pthread_barrier_t barrier;

static void *worker(void *arg) {
    long id = (long)arg;
    long lo = id * size / threads, hi = (id + 1) * size / threads;
    uint32_t *src = keys, *dst = spare;
    for (int shift = 0; shift < 32; shift += 8) {
        long *mine = counts[id];
        for (int d = 0; d < DIGITS; d++) mine[d] = 0;
        for (long i = lo; i < hi; i++) mine[(src[i] >> shift) & 0xff]++;
        pthread_barrier_wait(&barrier);
        long offset[DIGITS], at = 0;
        for (int d = 0; d < DIGITS; d++) {
            for (long t = 0; t < threads; t++) {
                if (t == id) offset[d] = at;
                at += counts[t][d];
            }
        }
        for (long i = lo; i < hi; i++) dst[offset[(src[i] >> shift) & 0xff]++] = src[i];
        pthread_barrier_wait(&barrier);
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    return NULL;
}

int main(int argc, char **argv) {
    size = arg_or(argc, argv, 1, 262144, 1, 1L << 28);
    threads = arg_or(argc, argv, 2, 4, 1, MAX_THREADS);
    keys = malloc((size_t)size * sizeof *keys);
    spare = malloc((size_t)size * sizeof *spare);
    if (!keys || !spare) return 4;
    uint32_t seed = 2463534242u, x_before = 0;
    unsigned long sum_before = 0;
    for (long i = 0; i < size; i++) {
        seed ^= seed << 13, seed ^= seed >> 17, seed ^= seed << 5;
        keys[i] = seed;
        sum_before += seed;
        x_before ^= seed;
    }
    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    run_threads((int)threads, worker);
    pthread_barrier_destroy(&barrier);
    /* Four passes: the keys end where they started. */
    int ok = 1;
    uint32_t x_after = 0;
    unsigned long sum_after = 0, checksum = 0;
    for (long i = 0; i < size; i++) {
        ok &= i == 0 || keys[i - 1] <= keys[i];
        sum_after += keys[i];
        x_after ^= keys[i];
        checksum = checksum * 31 + keys[i];
    }
    ok &= sum_after == sum_before && x_after == x_before;
    printf("radix size=%ld threads=%ld checksum=%lu\n", size, threads, checksum);
    free(keys);
    free(spare);
    return ok ? 0 : 1;
}
