/* Per round, the thread that gets PTHREAD_BARRIER_SERIAL_THREAD prints
 * its id (and the racy sum the round's threads wrote before it). */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#define THREADS 3
#define ROUNDS 8

static pthread_barrier_t b;
static long slot[THREADS];

static void *worker(void *arg) {
    long id = (long)arg;
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < (int)((id + r) % 3); k++) sched_yield();
        slot[id] = r * 10 + id;
        int ret = pthread_barrier_wait(&b);
        if (ret == PTHREAD_BARRIER_SERIAL_THREAD) printf("round %d serial %ld\n", r, id);
        else if (ret != 0) printf("round %d error %d\n", r, ret);
        pthread_barrier_wait(&b);
    }
    return NULL;
}

int main(void) {
    pthread_barrier_init(&b, NULL, THREADS);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&b);
    printf("done %ld %ld %ld\n", slot[0], slot[1], slot[2]);
    return 0;
}
