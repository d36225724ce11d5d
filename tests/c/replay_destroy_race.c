/* A mutex destroyed while other threads still use it (the bug of SCTBench's
 * ctrace, whose trc_end destroys the tracer's mutex under the other
 * threads). glibc refuses to destroy a locked mutex (EBUSY) and marks a
 * destroyed one invalid, so a lock after the destroy fails with EINVAL.
 * How many locks succeed, and how often the destroy is refused, depend on
 * the interleaving: a replay must give the recorded numbers, neither taking
 * a mutex the recording found destroyed nor finding destroyed one the
 * recording took. A semaphore and a condition variable are initialised and
 * destroyed under the same race. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>

#define USERS 2
#define ATTEMPTS 200000

static pthread_mutex_t m;
static pthread_cond_t c;
static sem_t s;
static long taken[USERS];
static int failure[USERS];
static long refused;

static void *user(void *arg) {
    long id = (long)arg;
    for (long i = 0; i < ATTEMPTS; i++) {
        int r = pthread_mutex_lock(&m);
        if (r != 0) {
            failure[id] = r;
            break;
        }
        taken[id]++;
        if (i % 64 == 0) pthread_cond_signal(&c);
        pthread_mutex_unlock(&m);
        if (i % 16 == 0) sched_yield();
    }
    return NULL;
}

static void *destroyer(void *arg) {
    (void)arg;
    for (int i = 0; i < 20; i++) sched_yield();
    sem_wait(&s);
    pthread_cond_destroy(&c);
    while (pthread_mutex_destroy(&m) == EBUSY) {
        refused++;
        sched_yield();
    }
    sem_destroy(&s);
    return NULL;
}

int main(void) {
    pthread_t users[USERS], d;
    pthread_mutex_init(&m, NULL);
    pthread_cond_init(&c, NULL);
    sem_init(&s, 0, 0);
    for (long i = 0; i < USERS; i++) pthread_create(&users[i], NULL, user, (void *)i);
    pthread_create(&d, NULL, destroyer, NULL);
    sem_post(&s);
    for (int i = 0; i < USERS; i++) pthread_join(users[i], NULL);
    pthread_join(d, NULL);
    for (int i = 0; i < USERS; i++) printf("user %d: %ld locks, then %d\n", i, taken[i], failure[i]);
    printf("destroy refused %s\n", refused ? "at least once" : "never");
    return 0;
}
