/* The main thread starts four workers that allocate and free in a loop,
 * then converts a time to local time at once: the first conversion reads
 * the time zone file inside libc, holding the runtime's descriptor lock
 * across the call, and allocates there (the file's name, its FILE and
 * buffer), so at replay it waits inside the call for the workers' heap
 * events that the recording had before its own. A worker that has not
 * started yet then needs the same lock to map its replay plan: the waiter
 * must lend it (descriptors::lent_while), or neither moves (SCTBench's
 * ctrace-test stalled this way). The printed addresses depend on how the
 * allocations interleaved. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 20000
#define WORKERS 2

static void *worker(void *arg) {
    unsigned long sum = 0;
    for (int i = 0; i < ROUNDS; i++) {
        char *s = strdup(i % 2 ? "odd" : "even");
        sum += (unsigned long)s % 4099;
        free(s);
    }
    *(unsigned long *)arg = sum;
    return NULL;
}

int main(void) {
    pthread_t threads[WORKERS];
    unsigned long sums[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        pthread_create(&threads[i], NULL, worker, &sums[i]);
    }
    time_t now = 86400 * 365;
    struct tm *tm = localtime(&now);
    char *after = malloc(24);
    for (int i = 0; i < WORKERS; i++) {
        pthread_join(threads[i], NULL);
    }
    unsigned long hash = 0;
    for (int i = 0; i < WORKERS; i++) {
        hash = hash * 31 + sums[i];
    }
    printf("year %d, sums %lu, block %p\n", tm->tm_year, hash, (void *)after);
    free(after);
    return 0;
}
