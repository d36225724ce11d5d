/* The waiter writes `shared` and then blocks in a non-instrumented helper
 * (a raw futex) until the other thread, which must first write `shared` too,
 * wakes it. While recording, the waiter keeps the stripe of `shared` from its
 * last access: unless the recorder hands that stripe over, the waker never
 * gets it and the recording hangs. Who writes `shared` first, and so what is
 * printed, depends on the interleaving. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

void helper_wait(atomic_int *word);
void helper_wake(atomic_int *word);

static atomic_int gate;
static int shared;
static int first;

static void *waker(void *arg) {
    (void)arg;
    if (shared == 0) first = 2;
    shared = shared * 10 + 2;
    helper_wake(&gate);
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, waker, NULL);
    if (shared == 0) first = 1;
    shared = shared * 10 + 1;
    helper_wait(&gate);
    pthread_join(t, NULL);
    printf("first %d shared %d\n", first, shared);
    return 0;
}
