/* Producer/consumer pairs handing items over through single-producer
 * single-consumer rings of 256 slots whose head and tail are C11 atomics
 * (acquire/release), each side spinning, then yielding, while its ring is
 * full or empty. The check: every consumer's sum of what it took.
 * usage: ring [ITEMS=300000] [PAIRS=1] */
#include <sched.h>
#include <stdatomic.h>

#include "common.h"

#define CAP 256

struct ring {
    _Atomic long head, tail;
    long slot[CAP];
    long sum;
};

static struct ring rings[MAX_THREADS / 2];
static long items;

static void *producer(struct ring *r) {
    for (long i = 0, polls = 0; i < items; i++) {
        long h = atomic_load_explicit(&r->head, memory_order_relaxed);
        while (h - atomic_load_explicit(&r->tail, memory_order_acquire) == CAP)
            if (++polls % 256 == 0) sched_yield();
        r->slot[h % CAP] = i * 3 + 1;
        atomic_store_explicit(&r->head, h + 1, memory_order_release);
    }
    return NULL;
}

static void *consumer(struct ring *r) {
    for (long i = 0, polls = 0; i < items; i++) {
        long t = atomic_load_explicit(&r->tail, memory_order_relaxed);
        while (atomic_load_explicit(&r->head, memory_order_acquire) == t)
            if (++polls % 256 == 0) sched_yield();
        r->sum += r->slot[t % CAP];
        atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    }
    return NULL;
}

/* Even ids produce into ring id / 2, odd ids consume from it. */
static void *worker(void *arg) {
    long id = (long)arg;
    struct ring *r = &rings[id / 2];
    return id % 2 == 0 ? producer(r) : consumer(r);
}

int main(int argc, char **argv) {
    items = arg_or(argc, argv, 1, 300000, 1, 1L << 32);
    long pairs = arg_or(argc, argv, 2, 1, 1, MAX_THREADS / 2);
    run_threads((int)(2 * pairs), worker);
    int ok = 1;
    long total = 0;
    for (long p = 0; p < pairs; p++) {
        ok &= rings[p].sum == 3 * (items * (items - 1) / 2) + items;
        total += rings[p].sum;
    }
    printf("ring items=%ld pairs=%ld total=%ld\n", items, pairs, total);
    return ok ? 0 : 1;
}
