/* Threads take turns in a critical section guarded by a test-and-set spin
 * lock (`atomic_exchange`, spinning, then yielding, while it is taken),
 * with some private work between. The check: the shared counter saw every
 * increment.
 * usage: spinlock [SECTIONS=200000] [THREADS=4] */
#include <sched.h>
#include <stdatomic.h>

#include "common.h"

static atomic_int lock;
static long sections, counter, last_owner;

static void *worker(void *arg) {
    long id = (long)arg, local = id;
    for (long i = 0, polls = 0; i < sections; i++) {
        for (int k = 0; k < 30; k++) local = local * 31 + k;
        while (atomic_exchange_explicit(&lock, 1, memory_order_acquire))
            if (++polls % 256 == 0) sched_yield();
        counter++;
        last_owner = id;
        atomic_store_explicit(&lock, 0, memory_order_release);
    }
    return (void *)local;
}

int main(int argc, char **argv) {
    sections = arg_or(argc, argv, 1, 200000, 1, 1L << 32);
    long threads = arg_or(argc, argv, 2, 4, 1, MAX_THREADS);
    run_threads((int)threads, worker);
    printf("spinlock sections=%ld threads=%ld counter=%ld\n", sections, threads, counter);
    return counter == sections * threads ? 0 : 1;
}
