/* Readers and a racy writer on one table: four threads read a table of
 * 64 longs (eight 64-byte blocks) over and over, so the recorder makes its
 * stripes read-shared and logs the reads without a lock; thread 0 also
 * overwrites one entry every few rounds without any lock, so reads race
 * with writes that end the sharing. Each thread prints a checksum of what
 * it read, which depends on the interleaving: a read logged on the wrong
 * side of a write replays with another value.
 * usage: replay_read_shared [ROUNDS=3000] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ENTRIES 64

static long rounds;
static volatile long table[ENTRIES];
static unsigned long seen[THREADS];

static void *worker(void *arg) {
    long id = (long)arg;
    unsigned long sum = 0;
    for (long r = 0; r < rounds; r++) {
        for (int i = 0; i < ENTRIES; i++) sum = sum * 31 + (unsigned long)table[i];
        if (id == 0 && r % 7 == 0) table[(r / 7) % ENTRIES] = r + 1;
    }
    seen[id] = sum;
    return NULL;
}

int main(int argc, char **argv) {
    rounds = argc > 1 ? atol(argv[1]) : 3000;
    for (int i = 0; i < ENTRIES; i++) table[i] = i;
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) printf("thread %d read %lu\n", i, seen[i]);
    return 0;
}
