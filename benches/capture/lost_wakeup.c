/* Lost wakeup: the consumer tests the flag without the lock, so the
 * producer's signal can come between the test and the wait, and the
 * consumer then waits forever (a hang: record it with --timeout). */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static volatile int ready;

static void *producer(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    ready = 1;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    if (!ready) {
        pthread_mutex_lock(&lock);
        pthread_cond_wait(&cond, &lock);
        pthread_mutex_unlock(&lock);
    }
    pthread_join(t, NULL);
    puts("ok");
    return 0;
}
