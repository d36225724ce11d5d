/* Detached threads that report completion through a condvar and then exit:
 * a later pthread_create may or may not reuse a finished thread's stack,
 * depending on how far that thread's teardown has got. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int done;
static long total;

static void *work(void *arg) {
    long n = (long)arg, s = 0;
    for (long i = 0; i < 2000; i++) s += i * n;
    pthread_mutex_lock(&m);
    total += s;
    done++;
    pthread_cond_signal(&c);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (int round = 0; round < 20; round++) {
        pthread_t t;
        int want;
        pthread_mutex_lock(&m);
        want = done + 2;
        pthread_mutex_unlock(&m);
        for (long k = 0; k < 2; k++)
            if (pthread_create(&t, &attr, work, (void *)(round * 2 + k)) != 0) abort();
        pthread_mutex_lock(&m);
        while (done < want) pthread_cond_wait(&c, &m);
        pthread_mutex_unlock(&m);
    }
    printf("total %ld done %d\n", total, done);
    return 0;
}
