/* Lock-order deadlock: one thread takes A then B, the other B then A. It
 * hangs only when each takes its first lock before the other its second
 * (record it with --timeout). */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t b = PTHREAD_MUTEX_INITIALIZER;
static int shared;

static void *forward(void *arg) {
    (void)arg;
    pthread_mutex_lock(&a);
    shared++;
    pthread_mutex_lock(&b);
    shared++;
    pthread_mutex_unlock(&b);
    pthread_mutex_unlock(&a);
    return NULL;
}

static void *backward(void *arg) {
    (void)arg;
    pthread_mutex_lock(&b);
    shared++;
    pthread_mutex_lock(&a);
    shared++;
    pthread_mutex_unlock(&a);
    pthread_mutex_unlock(&b);
    return NULL;
}

int main(void) {
    pthread_t t1, t2;
    pthread_create(&t1, NULL, forward, NULL);
    pthread_create(&t2, NULL, backward, NULL);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    printf("shared %d\n", shared);
    return 0;
}
