/* Four threads append to one buffer through a racy shared index (items
 * get lost or overwritten), then a little private work each round: every
 * thread hammers one granule. Prints the final index and a checksum of the
 * buffer, both of which depend on the interleaving.
 * usage: replay_shared_index [ROUNDS=20000] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define SLOTS 4096

static long rounds;
static volatile long buffer[SLOTS];
static volatile long next_slot;

static void *worker(void *arg) {
    long id = (long)arg;
    volatile long mine[16] = {0};
    for (long i = 0; i < rounds; i++) {
        long at = next_slot;
        buffer[at % SLOTS] = id * rounds + i + 1;
        next_slot = at + 1;
        for (int j = 0; j < 4; j++) mine[(i + j) % 16] += j;
    }
    return (void *)mine[1];
}

int main(int argc, char **argv) {
    rounds = argc > 1 ? atol(argv[1]) : 20000;
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    unsigned long sum = 0;
    for (long i = 0; i < SLOTS; i++) sum = sum * 31 + (unsigned long)buffer[i];
    printf("next %ld checksum %lu\n", next_slot, sum);
    return 0;
}
