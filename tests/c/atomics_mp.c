/* C11 atomics: message passing (plain payload published by a release store
 * of a flag, read after an acquire load sees it), fetch_add counters of
 * every width, a compare-exchange loop, and single-threaded checks of the
 * other read-modify-write operations. Exit status 0 when every value is
 * right. Prints the addresses the test looks for in the trace. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#define THREADS 3
#define ROUNDS 200
#define WORDS 16

static long payload[WORDS];
static atomic_int flag;
static atomic_uchar c8;
static atomic_ushort c16;
static atomic_uint c32;
static atomic_ullong c64;
static atomic_llong cas_counter;
static long consumer_sum;

static void *producer(void *arg) {
    (void)arg;
    for (int i = 0; i < WORDS; i++) payload[i] = (i + 1) * 11;
    atomic_store_explicit(&flag, 1, memory_order_release);
    return NULL;
}

static void *consumer(void *arg) {
    (void)arg;
    while (atomic_load_explicit(&flag, memory_order_acquire) == 0) {
    }
    long sum = 0;
    for (int i = 0; i < WORDS; i++) sum += payload[i];
    consumer_sum = sum;
    return NULL;
}

static void *counters(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        atomic_fetch_add_explicit(&c8, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&c16, 3, memory_order_acq_rel);
        atomic_fetch_add(&c32, 5);
        atomic_fetch_add_explicit(&c64, 7, memory_order_release);
        long long old = atomic_load_explicit(&cas_counter, memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(&cas_counter, &old, old + 2,
                                                      memory_order_acq_rel, memory_order_relaxed)) {
        }
    }
    return NULL;
}

static int single_threaded_checks(void) {
    int bad = 0;
    atomic_int x = 12;
    bad |= atomic_exchange(&x, 5) != 12;
    bad |= atomic_fetch_sub(&x, 2) != 5;
    bad |= atomic_fetch_or(&x, 0x10) != 3;
    bad |= atomic_fetch_and(&x, 0x12) != 0x13;
    bad |= atomic_fetch_xor(&x, 0xff) != 0x12;
    bad |= atomic_load(&x) != 0xed;
    int expected = 1;
    bad |= atomic_compare_exchange_strong(&x, &expected, 2) != 0;
    bad |= expected != 0xed;
    bad |= atomic_compare_exchange_strong(&x, &expected, 2) != 1;
    bad |= atomic_load_explicit(&x, memory_order_seq_cst) != 2;
    atomic_short s = -3;
    bad |= atomic_fetch_add(&s, 4) != -3 || atomic_load(&s) != 1;
    atomic_schar b = 100;
    bad |= atomic_fetch_add(&b, 27) != 100 || atomic_load(&b) != 127;
    atomic_thread_fence(memory_order_seq_cst);
    atomic_signal_fence(memory_order_seq_cst);
    return bad;
}

int main(void) {
    pthread_t t[THREADS + 2];
    pthread_create(&t[0], NULL, consumer, NULL);
    pthread_create(&t[1], NULL, producer, NULL);
    for (int i = 0; i < THREADS; i++) pthread_create(&t[2 + i], NULL, counters, NULL);
    for (int i = 0; i < THREADS + 2; i++) pthread_join(t[i], NULL);
    long want_sum = 0;
    for (int i = 0; i < WORDS; i++) want_sum += (i + 1) * 11;
    int bad = single_threaded_checks();
    bad |= consumer_sum != want_sum;
    bad |= atomic_load(&c8) != (unsigned char)(THREADS * ROUNDS);
    bad |= atomic_load(&c16) != (unsigned short)(THREADS * ROUNDS * 3);
    bad |= atomic_load(&c32) != THREADS * ROUNDS * 5u;
    bad |= atomic_load(&c64) != THREADS * ROUNDS * 7ull;
    bad |= atomic_load(&cas_counter) != THREADS * ROUNDS * 2ll;
    printf("flag %p\npayload %p %zu\nc8 %p\nc16 %p\nc32 %p\nc64 %p\ncas %p\n", (void *)&flag,
           (void *)payload, sizeof payload, (void *)&c8, (void *)&c16, (void *)&c32, (void *)&c64,
           (void *)&cas_counter);
    printf("%s\n", bad ? "WRONG" : "ok");
    return bad;
}
