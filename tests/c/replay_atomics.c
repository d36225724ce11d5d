/* Threads race with fetch_add to claim slots; prints the owner of each
 * slot, and a CAS-maintained maximum claim per thread. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#define THREADS 3
#define SLOTS 48

static long next_slot;
static char owner[SLOTS + 1];
static long last_claimer;

static void *worker(void *arg) {
    long id = (long)arg;
    for (;;) {
        long s = __atomic_fetch_add(&next_slot, 1, __ATOMIC_ACQ_REL);
        if (s >= SLOTS) break;
        __atomic_store_n(&owner[s], (char)('0' + id), __ATOMIC_RELEASE);
        long prev = __atomic_load_n(&last_claimer, __ATOMIC_ACQUIRE);
        while (!__atomic_compare_exchange_n(&last_claimer, &prev, id, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
        }
        if (s % 4 == 0) sched_yield();
    }
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    owner[SLOTS] = 0;
    printf("owners %s last %ld\n", owner, last_claimer);
    return 0;
}
