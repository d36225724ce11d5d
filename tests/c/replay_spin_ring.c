/* Single-producer, single-consumer rings whose threads spin on each
 * other's index (C11 atomics, the indices side by side in one cache line),
 * two pairs of threads; the first pair's consumer also waits, spinning,
 * until the main thread has done its own work before it starts. Prints
 * the sums received and the main thread's checksum.
 * usage: replay_spin_ring [ITEMS=20000] [WORK=200000] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define RING 64

static struct ring {
    _Atomic unsigned long head, tail;
    long slots[RING];
    long sum;
} rings[2];
static _Atomic int go;
static long items;

static void *produce(void *arg) {
    struct ring *r = arg;
    for (long i = 0; i < items; i++) {
        unsigned long t = atomic_load_explicit(&r->tail, memory_order_relaxed);
        while (t - atomic_load_explicit(&r->head, memory_order_acquire) >= RING) {
        }
        r->slots[t % RING] = 3 * i + 1;
        atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    }
    return NULL;
}

static void *consume(void *arg) {
    struct ring *r = arg;
    if (r == &rings[0]) {
        while (!atomic_load_explicit(&go, memory_order_acquire)) {
        }
    }
    long sum = 0;
    for (long i = 0; i < items; i++) {
        unsigned long h = atomic_load_explicit(&r->head, memory_order_relaxed);
        while (atomic_load_explicit(&r->tail, memory_order_acquire) == h) {
        }
        sum += r->slots[h % RING];
        atomic_store_explicit(&r->head, h + 1, memory_order_release);
    }
    r->sum = sum;
    return NULL;
}

int main(int argc, char **argv) {
    items = argc > 1 ? atol(argv[1]) : 20000;
    long work = argc > 2 ? atol(argv[2]) : 200000;
    pthread_t threads[4];
    for (int i = 0; i < 2; i++) {
        pthread_create(&threads[2 * i], NULL, produce, &rings[i]);
        pthread_create(&threads[2 * i + 1], NULL, consume, &rings[i]);
    }
    static long data[1024];
    unsigned long checksum = 0;
    for (long i = 0; i < work; i++) {
        data[i % 1024] += i;
        checksum = checksum * 31 + (unsigned long)data[(i * 7) % 1024];
    }
    atomic_store_explicit(&go, 1, memory_order_release);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    printf("sums %ld %ld checksum %lu\n", rings[0].sum, rings[1].sum, checksum);
    return 0;
}
