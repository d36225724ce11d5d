/* Two threads make many events (mutex-protected increments): enough for
 * each thread log to grow past its first chunk. Exits with status 3. */
#include <pthread.h>
#include <stdio.h>

static long counter;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *work(void *arg) {
    for (int i = 0; i < 400000; i++) {
        pthread_mutex_lock(&lock);
        counter++;
        pthread_mutex_unlock(&lock);
    }
    return arg;
}

int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("counter %ld\n", counter);
    return 3;
}
