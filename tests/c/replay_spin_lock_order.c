/* Three threads take turns in a critical section guarded by a
 * pthread_spinlock_t. Prints a checksum of the order in which they got it
 * (differs run to run): the replay must hand the lock over in the
 * recorded order. usage: replay_spin_lock_order [N] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 3

static pthread_spinlock_t lock;
static long sections = 3000, order, entries;

static void *worker(void *arg) {
    long id = (long)arg;
    for (long i = 0; i < sections; i++) {
        pthread_spin_lock(&lock);
        order = order * 3 + id;
        entries++;
        pthread_spin_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) sections = atol(argv[1]);
    pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_spin_destroy(&lock);
    printf("entries %ld order %ld\n", entries, order);
    return entries == sections * THREADS ? 0 : 1;
}
