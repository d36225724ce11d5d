/* Appends to one shared buffer through a racy shared index: every thread
 * reads the index, stores its item there and bumps the index, unsynchronised
 * (items are lost or overwritten, on purpose), then does a little private
 * work. All threads hammer the same granule, so while recording they take
 * turns on it as often as the recorder lets them: the case the recording
 * quantum (`record --quantum`) is for.
 * usage: shared_index [SIZE=50000 appends per thread] [THREADS=4] */
#include "common.h"

#define SLOTS (1 << 16)
#define PRIVATE_SLOTS 64

static long size;
static volatile long buffer[SLOTS];
static volatile long next_slot;

static void *worker(void *arg) {
    long id = (long)arg;
    volatile long mine[PRIVATE_SLOTS] = {0};
    for (long i = 0; i < size; i++) {
        long at = next_slot; /* racy */
        buffer[at % SLOTS] = id * size + i;
        next_slot = at + 1;
        for (int j = 0; j < 4; j++) mine[(i + j) % PRIVATE_SLOTS] += j;
    }
    return (void *)mine[1];
}

int main(int argc, char **argv) {
    size = arg_or(argc, argv, 1, 50000, 1, 1L << 28);
    long threads = arg_or(argc, argv, 2, 4, 1, MAX_THREADS);
    run_threads((int)threads, worker);
    long filled = 0;
    for (long i = 0; i < SLOTS; i++) filled += buffer[i] != 0;
    printf("shared_index size=%ld threads=%ld next=%ld filled=%ld\n", size, threads, next_slot,
           filled);
    return next_slot <= size * threads ? 0 : 1;
}
