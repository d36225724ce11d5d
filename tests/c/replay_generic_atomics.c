/* Atomic objects of sizes without a hook of their own: gcc and clang call
 * libatomic's generic __atomic_load, __atomic_store, __atomic_exchange and
 * __atomic_compare_exchange for them, uninstrumented, and libatomic does
 * a 6-byte object's without a lock (a compare-and-swap of the word around
 * it). Four threads count in a 6-byte counter by compare-and-swap and
 * trade a 24-byte record by exchange; what each saw depends on the order
 * of their operations, and each replay must print its recording's.
 * (Built natively, it needs -latomic.) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 3000

struct counter { unsigned short lo, mid, hi; };   /* 6 bytes */
struct record { long owner, round, check; };       /* 24 bytes */

static _Atomic struct counter counter;
static _Atomic struct record latest;
static unsigned long seen[THREADS];

static unsigned long value(struct counter c) {
    return c.lo | (unsigned long)c.mid << 16 | (unsigned long)c.hi << 32;
}

static struct counter counter_of(unsigned long v) {
    struct counter c = { (unsigned short)v, (unsigned short)(v >> 16), (unsigned short)(v >> 32) };
    return c;
}

static void *worker(void *arg) {
    long id = (long)arg;
    unsigned long h = 0;
    for (long i = 0; i < ROUNDS; i++) {
        struct counter old = atomic_load(&counter);
        while (!atomic_compare_exchange_weak(&counter, &old, counter_of(value(old) + 1)))
            h++;
        struct record mine = { id, i, id * 1000003 + i };
        struct record before = atomic_exchange(&latest, mine);
        if (before.check != before.owner * 1000003 + before.round)
            printf("torn record %ld %ld %ld\n", before.owner, before.round, before.check);
        h = h * 31 + (unsigned long)before.owner * 7 + (unsigned long)value(old);
        if (i % 64 == 0) {
            struct record reset = { id, -1, id * 1000003 - 1 };
            atomic_store(&latest, reset);
        }
    }
    seen[id] = h;
    return NULL;
}

int main(void) {
    pthread_t threads[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    printf("count %lu of %d\n", value(atomic_load(&counter)), THREADS * ROUNDS);
    for (int i = 0; i < THREADS; i++)
        printf("thread %d saw %lx\n", i, seen[i]);
    return 0;
}
