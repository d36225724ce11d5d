/* Producer/consumer: THREADS/2 producers and the rest consumers (at least
 * one of each) pass SIZE items in total through a bounded buffer guarded by
 * a mutex and two condition variables. Every item is consumed exactly once:
 * the sum is checked; which consumer got which item depends on the run.
 * usage: prodcons [SIZE=20000 items] [THREADS=4] */
#include "common.h"

#define CAP 16

static long size, threads, producers;
static long buf[CAP];
static long head, count, producers_left;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static long consumed_sum[MAX_THREADS], consumed_n[MAX_THREADS];

static void *producer(long id) {
    long lo = id * size / producers, hi = (id + 1) * size / producers;
    for (long i = lo; i < hi; i++) {
        pthread_mutex_lock(&m);
        while (count == CAP) pthread_cond_wait(&not_full, &m);
        buf[(head + count) % CAP] = i + 1;
        count++;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&m);
    }
    pthread_mutex_lock(&m);
    if (--producers_left == 0) pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&m);
    return NULL;
}

static void *consumer(long id) {
    for (;;) {
        pthread_mutex_lock(&m);
        while (count == 0 && producers_left > 0) pthread_cond_wait(&not_empty, &m);
        if (count == 0) {
            pthread_mutex_unlock(&m);
            return NULL;
        }
        long item = buf[head];
        head = (head + 1) % CAP;
        count--;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&m);
        consumed_sum[id] += item;
        consumed_n[id]++;
    }
}

static void *worker(void *arg) {
    long id = (long)arg;
    return id < producers ? producer(id) : consumer(id);
}

int main(int argc, char **argv) {
    size = arg_or(argc, argv, 1, 20000, 1, 1L << 28);
    threads = arg_or(argc, argv, 2, 4, 2, MAX_THREADS);
    producers = producers_left = threads / 2;
    run_threads((int)threads, worker);
    long sum = 0, n = 0, hash = 0;
    for (long i = producers; i < threads; i++) {
        sum += consumed_sum[i];
        n += consumed_n[i];
        hash = hash * 31 + consumed_n[i];
    }
    printf("prodcons size=%ld threads=%ld consumed=%ld per_consumer_hash=%ld\n", size, threads, n,
           hash);
    return n == size && sum == size * (size + 1) / 2 ? 0 : 1;
}
