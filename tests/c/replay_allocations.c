/* Four threads allocate and free small blocks at a high rate while they
 * touch only their own data: nearly every event replay must act on is an
 * allocation whose address it checks. The replay plans hold a point for
 * each, so they show what a plan costs per point. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ROUNDS 20000

static long sums[THREADS];

static void *worker(void *arg) {
    long me = (long)arg;
    long sum = 0;
    for (long i = 0; i < ROUNDS; i++) {
        long *block = malloc(sizeof(long) * (1 + i % 4));
        if (!block) return NULL;
        block[0] = i * me;
        sum += block[0];
        free(block);
    }
    sums[me] = sum;
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    long total = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        total += sums[i];
    }
    printf("total %ld\n", total);
    return 0;
}
