/* Two producers, two consumers, a bounded buffer with condition variables.
 * Each consumer prints which producer each of its items came from. */
#include <pthread.h>
#include <stdio.h>

#define PRODUCERS 2
#define CONSUMERS 2
#define ITEMS 20 /* per producer */
#define CAP 3

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static int buf[CAP];
static int head, count, produced_done;
static char got[CONSUMERS][PRODUCERS * ITEMS + 1];

static void *producer(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < ITEMS; i++) {
        pthread_mutex_lock(&m);
        while (count == CAP) pthread_cond_wait(&not_full, &m);
        buf[(head + count) % CAP] = (int)id;
        count++;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&m);
    }
    pthread_mutex_lock(&m);
    produced_done++;
    pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&m);
    return NULL;
}

static void *consumer(void *arg) {
    long id = (long)arg;
    int n = 0;
    for (;;) {
        pthread_mutex_lock(&m);
        while (count == 0 && produced_done < PRODUCERS) pthread_cond_wait(&not_empty, &m);
        if (count == 0) {
            pthread_mutex_unlock(&m);
            break;
        }
        int item = buf[head];
        head = (head + 1) % CAP;
        count--;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&m);
        got[id][n++] = (char)('A' + item);
    }
    got[id][n] = 0;
    return NULL;
}

int main(void) {
    pthread_t p[PRODUCERS], c[CONSUMERS];
    for (long i = 0; i < CONSUMERS; i++) pthread_create(&c[i], NULL, consumer, (void *)i);
    for (long i = 0; i < PRODUCERS; i++) pthread_create(&p[i], NULL, producer, (void *)i);
    for (int i = 0; i < PRODUCERS; i++) pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++) pthread_join(c[i], NULL);
    for (int i = 0; i < CONSUMERS; i++) printf("consumer %d got %s\n", i, got[i]);
    return 0;
}
