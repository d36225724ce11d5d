/* Program bugs glibc's free() reports by aborting: "interior" frees a
 * pointer into the middle of a block (Phoenix's histogram-pthread frees
 * arrays inside a struct it allocated whole), "double" frees a block
 * twice. Threads fill the block first, so the words before the interior
 * pointers hold the program's numbers, not a header. rr-lite's heap must
 * abort as glibc does, recording and replaying the crash. "underflow"
 * writes over the word 16 bytes before a block (glibc keeps the previous
 * chunk's size there, which it does not check while that chunk is in use)
 * and frees the block: natively nothing happens, and neither must it under
 * rr-lite, whose heap kept the block's size class there. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    long pos;
    int red[256], green[256];
} slot_t;

static void *fill(void *p) {
    slot_t *s = p;
    for (int i = 0; i < 256; i++) {
        s->red[i] = 9000 + i;
        s->green[i] = 40 + i % 8;
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *how = argc > 1 ? argv[1] : "interior";
    slot_t *slots = calloc(2, sizeof *slots);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, fill, &slots[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("filled %d %d\n", slots[0].red[255], slots[1].green[7]);
    fflush(stdout);
    if (strcmp(how, "underflow") == 0) {
        long *block = malloc(48);
        for (int i = 0; i < 6; i++) block[i] = i;
        /* The program's number, not a header (volatile: the compiler drops
         * a store into a block about to be freed). */
        ((volatile long *)block)[-2] = 0x2000000044L;
        free(block);
        long *again = malloc(48);
        printf("freed, again %s\n", again == block ? "the same block" : "another block");
        free(again);
        return 0;
    }
    if (strcmp(how, "double") == 0) {
        free(slots);
        free(slots);
    } else {
        free(slots[1].green);
    }
    printf("not reached\n");
    return 0;
}
