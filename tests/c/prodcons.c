/* Producers and consumers over a bounded buffer with two condition
 * variables. Every item is consumed exactly once: the sum is checked. */
#include <pthread.h>
#include <stdio.h>

#define CAP 4
#define PRODUCERS 2
#define CONSUMERS 2
#define ITEMS 300 /* per producer */

static int buf[CAP];
static int head, count, producers_left = PRODUCERS;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static long consumed_sum[CONSUMERS], consumed_n[CONSUMERS];

/* Start gate: every thread waits on `gate` until main has seen all of them
 * waiting, so each thread certainly waits on a condition variable once. */
static pthread_cond_t gate = PTHREAD_COND_INITIALIZER, all_waiting = PTHREAD_COND_INITIALIZER;
static int waiting, go;

static void start_gate(void) {
    pthread_mutex_lock(&m);
    waiting++;
    pthread_cond_signal(&all_waiting);
    while (!go) pthread_cond_wait(&gate, &m);
    pthread_mutex_unlock(&m);
}

static void *producer(void *arg) {
    int base = (int)(long)arg * ITEMS;
    start_gate();
    for (int i = 1; i <= ITEMS; i++) {
        pthread_mutex_lock(&m);
        while (count == CAP) pthread_cond_wait(&not_full, &m);
        buf[(head + count) % CAP] = base + i;
        count++;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&m);
    }
    pthread_mutex_lock(&m);
    if (--producers_left == 0) pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&m);
    return NULL;
}

static void *consumer(void *arg) {
    long id = (long)arg;
    start_gate();
    for (;;) {
        pthread_mutex_lock(&m);
        while (count == 0 && producers_left > 0) pthread_cond_wait(&not_empty, &m);
        if (count == 0) {
            pthread_mutex_unlock(&m);
            return NULL;
        }
        int item = buf[head];
        head = (head + 1) % CAP;
        count--;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&m);
        consumed_sum[id] += item;
        consumed_n[id]++;
    }
}

int main(void) {
    pthread_t p[PRODUCERS], c[CONSUMERS];
    for (long i = 0; i < CONSUMERS; i++) pthread_create(&c[i], NULL, consumer, (void *)i);
    for (long i = 0; i < PRODUCERS; i++) pthread_create(&p[i], NULL, producer, (void *)i);
    pthread_mutex_lock(&m);
    while (waiting < PRODUCERS + CONSUMERS) pthread_cond_wait(&all_waiting, &m);
    go = 1;
    pthread_cond_broadcast(&gate);
    pthread_mutex_unlock(&m);
    for (int i = 0; i < PRODUCERS; i++) pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++) pthread_join(c[i], NULL);
    long sum = 0, n = 0;
    for (int i = 0; i < CONSUMERS; i++) {
        sum += consumed_sum[i];
        n += consumed_n[i];
    }
    long want = (long)PRODUCERS * ITEMS * (PRODUCERS * ITEMS + 1) / 2;
    printf("consumed %ld items, sum %ld\n", n, sum);
    return sum == want && n == PRODUCERS * ITEMS ? 0 : 1;
}
