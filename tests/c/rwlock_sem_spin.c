/* Read-write locks (blocking and try forms), semaphores (wait, trywait,
 * timedwait, including the EAGAIN and ETIMEDOUT outcomes), spin locks and
 * pthread_mutex_trylock (both the busy and the acquired outcome, made
 * certain by a semaphore handshake), locks that fail (an error-checking
 * mutex locked twice, a destroyed mutex) and a destroy refused because the
 * mutex is locked. Exit status 0 when all checks pass. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>

#define READERS 3
#define ROUNDS 200

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static long pair_a, pair_b;
static int torn;

static pthread_spinlock_t spin;
static long spin_count;

static sem_t ping, pong, handshake, handshake_back;
static pthread_mutex_t trylock_mutex = PTHREAD_MUTEX_INITIALIZER;
static int trylock_busy_result = -1, trylock_free_result = -1;

static void *rw_writer(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        if (i % 4 == 0 && pthread_rwlock_trywrlock(&rw) == 0) {
            pair_a++;
            pair_b++;
            pthread_rwlock_unlock(&rw);
        }
        pthread_rwlock_wrlock(&rw);
        pair_a++;
        pair_b++;
        pthread_rwlock_unlock(&rw);
    }
    return NULL;
}

static void *rw_reader(void *arg) {
    (void)arg;
    int bad = 0;
    for (int i = 0; i < ROUNDS; i++) {
        int r = i % 3 == 0 ? pthread_rwlock_tryrdlock(&rw) : pthread_rwlock_rdlock(&rw);
        if (r != 0) continue;
        bad |= pair_a != pair_b;
        pthread_rwlock_unlock(&rw);
    }
    if (bad) __atomic_store_n(&torn, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void *spinner(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        if (i % 5 == 0 && pthread_spin_trylock(&spin) == 0) {
            spin_count++;
            pthread_spin_unlock(&spin);
            continue;
        }
        pthread_spin_lock(&spin);
        spin_count++;
        pthread_spin_unlock(&spin);
    }
    return NULL;
}

static void *pinger(void *arg) {
    (void)arg;
    for (int i = 0; i < 50; i++) {
        sem_post(&ping);
        sem_wait(&pong);
    }
    return NULL;
}

static void *ponger(void *arg) {
    (void)arg;
    for (int i = 0; i < 50; i++) {
        sem_wait(&ping);
        sem_post(&pong);
    }
    return NULL;
}

static void *trylocker(void *arg) {
    (void)arg;
    trylock_busy_result = pthread_mutex_trylock(&trylock_mutex); /* main holds it */
    sem_post(&handshake);
    sem_wait(&handshake_back); /* main has unlocked it */
    trylock_free_result = pthread_mutex_trylock(&trylock_mutex);
    if (trylock_free_result == 0) pthread_mutex_unlock(&trylock_mutex);
    return NULL;
}

int main(void) {
    int bad = 0;
    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
    sem_init(&ping, 0, 0);
    sem_init(&pong, 0, 0);
    sem_init(&handshake, 0, 0);
    sem_init(&handshake_back, 0, 0);

    /* Outcomes that do not depend on timing. */
    sem_t empty;
    sem_init(&empty, 0, 0);
    errno = 0;
    bad |= sem_trywait(&empty) != -1 || errno != EAGAIN;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += 20 * 1000 * 1000;
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000;
    }
    errno = 0;
    bad |= sem_timedwait(&empty, &deadline) != -1 || errno != ETIMEDOUT;
    sem_post(&empty);
    bad |= sem_trywait(&empty) != 0;
    sem_post(&empty);
    bad |= sem_timedwait(&empty, &deadline) != 0; /* a unit is there: no wait */

    pthread_mutex_lock(&trylock_mutex);
    pthread_t tl;
    pthread_create(&tl, NULL, trylocker, NULL);
    sem_wait(&handshake);
    pthread_mutex_unlock(&trylock_mutex);
    sem_post(&handshake_back);
    pthread_join(tl, NULL);
    bad |= trylock_busy_result != EBUSY || trylock_free_result != 0;

    /* Failures that do not depend on timing either. */
    pthread_mutexattr_t checking;
    pthread_mutexattr_init(&checking);
    pthread_mutexattr_settype(&checking, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_t mine;
    pthread_mutex_init(&mine, &checking);
    bad |= pthread_mutex_lock(&mine) != 0;
    bad |= pthread_mutex_lock(&mine) != EDEADLK;
    bad |= pthread_mutex_destroy(&mine) != EBUSY;
    pthread_mutex_unlock(&mine);
    bad |= pthread_mutex_destroy(&mine) != 0;
    bad |= pthread_mutex_lock(&mine) != EINVAL; /* glibc marks it destroyed */

    pthread_t t[READERS + 1 + 3 + 2];
    int n = 0;
    pthread_create(&t[n++], NULL, rw_writer, NULL);
    for (int i = 0; i < READERS; i++) pthread_create(&t[n++], NULL, rw_reader, NULL);
    for (int i = 0; i < 3; i++) pthread_create(&t[n++], NULL, spinner, NULL);
    pthread_create(&t[n++], NULL, pinger, NULL);
    pthread_create(&t[n++], NULL, ponger, NULL);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);

    bad |= torn;
    bad |= pair_a != pair_b || pair_a < ROUNDS;
    bad |= spin_count != 3 * ROUNDS;
    printf("trylock busy=%d free=%d spin=%ld %s\n", trylock_busy_result, trylock_free_result,
           spin_count, bad ? "WRONG" : "ok");
    return bad;
}
