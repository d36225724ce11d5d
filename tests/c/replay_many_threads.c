/* One hundred short threads, every third one detached: each adds to a
 * locked total and to a racy counter. Thread creation must not stall
 * whatever stripes the threads' pseudo-addresses share with the heap or
 * glibc's stack cache. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 100

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_done = PTHREAD_COND_INITIALIZER;
static long total, racy;
static int finished;

static void *work(void *arg) {
    long me = (long)arg;
    for (int i = 0; i < 50; i++) racy += me;
    pthread_mutex_lock(&lock);
    total += me;
    finished++;
    pthread_cond_signal(&all_done);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    pthread_attr_t detached;
    pthread_attr_init(&detached);
    pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
    for (long i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], i % 3 == 0 ? &detached : NULL, work, (void *)i) != 0) return 2;
    for (long i = 0; i < THREADS; i++)
        if (i % 3 != 0) pthread_join(t[i], NULL);
    pthread_mutex_lock(&lock);
    while (finished < THREADS) pthread_cond_wait(&all_done, &lock);
    pthread_mutex_unlock(&lock);
    printf("total %ld racy %ld\n", total, racy);
    return 0;
}
