/* A write over the allocator's header racing with a free: one thread
 * frees a block while main writes one byte just before it, where the
 * heap keeps the block's tag (SCTBench's ctrace-test does this when its
 * program name is long). Nothing in the program orders the two: one side
 * waits 20 ms by the clock, which replay serves from the log without
 * waiting. "after": the free comes first, then the write; the block is
 * allocated again (which writes its tag afresh) and the program exits 0.
 * "before": the write comes first and the free aborts on the tag it finds
 * changed (`free(): invalid pointer`), as glibc's check does. Only the
 * free's own event, which must cover the block's header and come before
 * its check, keeps the recorded order at replay. "reuse": the free, then
 * main's write, then (40 ms after the free) the freeing thread allocates
 * the block again, which writes the tag afresh, and frees it: the
 * allocation's event must cover the header too, or the replayed write may
 * come after it and the second free abort. "realloc": as "after", but the
 * thread moves the block with realloc (which checks the header and frees
 * the block) instead of freeing it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *block;
static int free_late, reuse, moves;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void wait_ms(int ms) {
    double start = now();
    while (now() - start < ms / 1e3) {
    }
}

static void *freer(void *arg) {
    (void)arg;
    if (free_late) wait_ms(20);
    if (moves)
        free(realloc(block, 4096));
    else
        free(block);
    if (reuse) {
        wait_ms(40);
        char *again = malloc(64);
        printf("%s\n", again == block ? "reused" : "not reused");
        free(again);
    }
    return NULL;
}

int main(int argc, char **argv) {
    free_late = argc > 1 && strcmp(argv[1], "before") == 0;
    reuse = argc > 1 && strcmp(argv[1], "reuse") == 0;
    moves = argc > 1 && strcmp(argv[1], "realloc") == 0;
    block = malloc(64);
    pthread_t t;
    pthread_create(&t, NULL, freer, NULL);
    if (!free_late) wait_ms(20);
    ((volatile char *)block)[-1] = ' ';
    pthread_join(t, NULL);
    char *again = malloc(64);
    printf("%s\n", again == block ? "the same block again" : "another block");
    free(again);
    return 0;
}
