/* False sharing: four threads update an array of ints dealt out one by one
 * (thread t owns the elements i with i % 4 == t), so every 8-byte granule
 * holds two threads' elements while no element is shared. Prints a
 * checksum, which does not depend on the interleaving.
 * usage: replay_false_sharing [ELEMENTS=20000] [ROUNDS=5] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4

static long elements, rounds;
static int *values;

static void *worker(void *arg) {
    long id = (long)arg;
    for (long r = 0; r < rounds; r++)
        for (long i = id; i < elements; i += THREADS) values[i] = values[i] * 3 + (int)r;
    return NULL;
}

int main(int argc, char **argv) {
    elements = argc > 1 ? atol(argv[1]) : 20000;
    rounds = argc > 2 ? atol(argv[2]) : 5;
    values = calloc((size_t)elements, sizeof *values);
    if (!values) return 4;
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&threads[t], NULL, worker, (void *)t);
    for (long t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
    unsigned long sum = 0;
    for (long i = 0; i < elements; i++) sum = sum * 31 + (unsigned)values[i];
    printf("false sharing: %ld elements, %ld rounds, checksum %lu\n", elements, rounds, sum);
    free(values);
    return 0;
}
