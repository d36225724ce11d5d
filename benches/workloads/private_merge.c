/* Private compute with a final merge: each thread fills its own heap array,
 * runs a few dependent passes over it, and adds its partial sum to a shared
 * total under a mutex at the end. Almost nothing is shared: this measures the
 * per-access cost of the hooks, the record log and replay counting.
 * usage: private_merge [SIZE=40000 elements per thread] [THREADS=4] */
#include "common.h"

#define PASSES 4

static long size, threads;
static unsigned long total;
static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned long compute(long id, unsigned *a) {
    unsigned x = (unsigned)id * 2654435761u + 1u;
    for (long i = 0; i < size; i++) a[i] = x = x * 1103515245u + 12345u;
    for (int p = 0; p < PASSES; p++)
        for (long i = 1; i < size; i++) a[i] = (a[i] ^ (a[i - 1] >> 3)) + (unsigned)p;
    unsigned long s = 0;
    for (long i = 0; i < size; i++) s += a[i];
    return s;
}

static void *worker(void *arg) {
    long id = (long)arg;
    unsigned *a = malloc((size_t)size * sizeof *a);
    if (!a) exit(4);
    unsigned long s = compute(id, a);
    free(a);
    pthread_mutex_lock(&total_lock);
    total += s;
    pthread_mutex_unlock(&total_lock);
    return NULL;
}

int main(int argc, char **argv) {
    size = arg_or(argc, argv, 1, 40000, 2, 1L << 26);
    threads = arg_or(argc, argv, 2, 4, 1, MAX_THREADS);
    run_threads((int)threads, worker);
    unsigned long want = 0;
    unsigned *a = malloc((size_t)size * sizeof *a);
    if (!a) return 4;
    for (long id = 0; id < threads; id++) want += compute(id, a);
    free(a);
    printf("private_merge size=%ld threads=%ld total=%lu\n", size, threads, total);
    return total == want ? 0 : 1;
}
