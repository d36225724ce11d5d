/* Three threads take turns in a critical section guarded by a
 * test-and-set lock (atomic_exchange; a yield every 64 failed tries).
 * Prints the owners' order checksum and the failed tries of each thread
 * (both differ run to run): the replay must give every try its recorded
 * result, so that the same thread wins each turn. usage: replay_tas_lock [N] */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 3

static atomic_int lock;
static long sections = 2000, order, entries;
static long failed[THREADS];

static void *worker(void *arg) {
    long id = (long)arg, tries = 0;
    for (long i = 0; i < sections; i++) {
        while (atomic_exchange_explicit(&lock, 1, memory_order_acquire))
            if (++tries % 64 == 0) sched_yield();
        order = order * 3 + id;
        entries++;
        atomic_store_explicit(&lock, 0, memory_order_release);
    }
    failed[id] = tries;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) sections = atol(argv[1]);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    printf("entries %ld order %ld failed %ld %ld %ld\n", entries, order, failed[0], failed[1],
           failed[2]);
    return entries == sections * THREADS ? 0 : 1;
}
