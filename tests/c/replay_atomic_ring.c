/* One producer hands items to one consumer through a small ring buffer
 * whose head and tail are C11 atomics (acquire/release), both spinning
 * when it is full or empty (yielding every 64 polls, so that on a loaded
 * machine neither polls for a whole time slice). Prints the consumer's
 * checksum (fixed) and how often each side found the ring full or empty
 * (differs run to run): the replay must reproduce every failed poll.
 * usage: replay_atomic_ring [ITEMS] */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define CAP 8

static _Atomic long head, tail;
static long buf[CAP];
static long items = 3000;
static long full_polls, empty_polls, checksum;

static void *producer(void *arg) {
    (void)arg;
    for (long i = 0; i < items; i++) {
        long h = atomic_load_explicit(&head, memory_order_relaxed);
        while (h - atomic_load_explicit(&tail, memory_order_acquire) == CAP)
            if (++full_polls % 64 == 0) sched_yield();
        buf[h % CAP] = i * 7 + 3;
        atomic_store_explicit(&head, h + 1, memory_order_release);
    }
    return NULL;
}

static void *consumer(void *arg) {
    (void)arg;
    for (long i = 0; i < items; i++) {
        long t = atomic_load_explicit(&tail, memory_order_relaxed);
        while (atomic_load_explicit(&head, memory_order_acquire) == t)
            if (++empty_polls % 64 == 0) sched_yield();
        checksum = checksum * 31 + buf[t % CAP];
        atomic_store_explicit(&tail, t + 1, memory_order_release);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) items = atol(argv[1]);
    pthread_t p, c;
    pthread_create(&p, NULL, producer, NULL);
    pthread_create(&c, NULL, consumer, NULL);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    printf("checksum %ld full polls %ld empty polls %ld\n", checksum, full_polls, empty_polls);
    return 0;
}
