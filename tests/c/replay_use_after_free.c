/* A use-after-free race: one thread keeps reading a node's first field
 * while another frees the node. Reads before the free see the value, reads
 * after it see what the allocator wrote there (its free-list link); how
 * many of each depends on the interleaving. Replay must give the same
 * counts: the free is a write to that word, ordered like any other. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct node {
    long value;
    long pad[3];
};

static struct node *volatile shared;
static volatile int freed;

static void *reader(void *arg) {
    (void)arg;
    long same = 0, other = 0;
    for (int i = 0; i < 20000; i++) {
        if (shared->value == 42) same++;
        else other++;
    }
    printf("saw the value %ld times, something else %ld times\n", same, other);
    return NULL;
}

static void *freer(void *arg) {
    (void)arg;
    long spin = 0;
    for (int i = 0; i < 3000; i++) spin += i;
    struct node *spare = malloc(sizeof *spare); /* a block freed first, so the link is not 0 */
    free(spare);
    free(shared);
    freed = 1;
    return (void *)spin;
}

int main(void) {
    shared = malloc(sizeof *shared);
    shared->value = 42;
    pthread_t r, f;
    pthread_create(&r, NULL, reader, NULL);
    pthread_create(&f, NULL, freer, NULL);
    pthread_join(r, NULL);
    pthread_join(f, NULL);
    return 0;
}
