/* A thread cancelled while it waits in pthread_cond_wait: glibc re-takes
 * the mutex inside the wait, unseen, and unwinds through the cleanup
 * handler. Record cannot hold that (replay would leave the wait otherwise),
 * so the trace must say it is incomplete and replay refuse it. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static int waiting, cleaned;

static void unlock_on_cancel(void *arg) {
    (void)arg;
    cleaned = 1;
    pthread_mutex_unlock(&lock);
}

static void *waiter(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    pthread_cleanup_push(unlock_on_cancel, NULL);
    waiting = 1;
    for (;;) pthread_cond_wait(&never, &lock);
    pthread_cleanup_pop(1);
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    for (;;) {
        /* Taking the lock once `waiting` is set: the waiter is in the wait. */
        pthread_mutex_lock(&lock);
        int in_wait = waiting;
        pthread_mutex_unlock(&lock);
        if (in_wait) break;
        sched_yield();
    }
    pthread_cancel(t);
    void *ret;
    pthread_join(t, &ret);
    printf("cancelled %d cleaned %d\n", ret == PTHREAD_CANCELED, cleaned);
    return 0;
}
