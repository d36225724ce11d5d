/* Fine-grained racy sharing: every thread makes SIZE read-modify-write
 * updates, each to a small shared array (unsynchronised, racy on purpose)
 * with probability SHARED/1000, else to its own private array. SHARED is the
 * sharing ratio the replay cost is measured against; the shared sum depends
 * on the interleaving (lost updates).
 * usage: racy_share [SIZE=40000 updates per thread] [THREADS=4] [SHARED=100 per mille] */
#include "common.h"

#define SHARED_SLOTS 64
#define PRIVATE_SLOTS 4096

static long size, threads, per_mille;
static long shared[SHARED_SLOTS];
static long *priv[MAX_THREADS];

static void *worker(void *arg) {
    long id = (long)arg;
    long *mine = priv[id];
    unsigned seed = (unsigned)id * 40503u + 7u;
    for (long i = 0; i < size; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned r = seed >> 8;
        if ((long)(r % 1000) < per_mille)
            shared[(r >> 10) % SHARED_SLOTS] += 1; /* racy */
        else
            mine[(r >> 10) % PRIVATE_SLOTS] += 1;
    }
    return NULL;
}

int main(int argc, char **argv) {
    size = arg_or(argc, argv, 1, 40000, 1, 1L << 28);
    threads = arg_or(argc, argv, 2, 4, 1, MAX_THREADS);
    per_mille = arg_or(argc, argv, 3, 100, 0, 1000);
    for (long t = 0; t < threads; t++) {
        priv[t] = calloc(PRIVATE_SLOTS, sizeof(long));
        if (!priv[t]) return 4;
    }
    run_threads((int)threads, worker);
    long s = 0, p = 0;
    for (int i = 0; i < SHARED_SLOTS; i++) s += shared[i];
    for (long t = 0; t < threads; t++) {
        for (int i = 0; i < PRIVATE_SLOTS; i++) p += priv[t][i];
        free(priv[t]);
    }
    printf("racy_share size=%ld threads=%ld shared=%ld/1000 shared_sum=%ld private_sum=%ld\n",
           size, threads, per_mille, s, p);
    return s + p <= size * threads ? 0 : 1;
}
