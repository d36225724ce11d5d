/* Hangs every time: a thread waits for a signal nobody sends, and main
 * joins it. A stand-in for a deadlock to stop with `record --timeout`. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static int woken;

static void *waiter(void *arg) {
    pthread_mutex_lock(&lock);
    while (!woken)
        pthread_cond_wait(&never, &lock);
    pthread_mutex_unlock(&lock);
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    puts("waiting");
    fflush(stdout);
    pthread_join(t, NULL);
    return 0;
}
