/* Lock striping, as BARNES's cell locks and many hash tables do: a fixed
 * array of mutexes, each guarding the slots whose index it hashes to.
 * Four threads bump random slots, each under its slot's mutex, through a
 * helper function; two threads meeting on a mutex seldom touch the same
 * slot, so most critical sections need no order at replay. A second phase
 * reads input under one mutex (stdio's hidden state): those sections must
 * keep the recorded order. The checksum shows any lost or reordered
 * update. Usage: replay_striped_locks [ROUNDS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define LOCKS 64
#define SLOTS 4096
#define THREADS 4

static pthread_mutex_t locks[LOCKS];
static long slots[SLOTS];
static long rounds = 20000;
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;
static long last_writer[LOCKS];

static void bump(long slot, long by) { slots[slot] = slots[slot] * 3 + by; }

static void *worker(void *arg) {
    long me = (long)arg;
    unsigned long x = 0x9e3779b97f4a7c15ul * (unsigned long)(me + 1);
    for (long i = 0; i < rounds; i++) {
        x = x * 6364136223846793005ul + 1442695040888963407ul;
        long slot = (long)(x >> 33) % SLOTS;
        pthread_mutex_t *m = &locks[slot % LOCKS];
        pthread_mutex_lock(m);
        bump(slot, me + 1);
        pthread_mutex_unlock(m);
        if (i % 1024 == 0) {
            /* Who got here last: the order of these sections matters. */
            pthread_mutex_lock(&last_lock);
            last_writer[slot % LOCKS] = me;
            pthread_mutex_unlock(&last_lock);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) rounds = atol(argv[1]);
    for (int i = 0; i < LOCKS; i++) pthread_mutex_init(&locks[i], NULL);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    unsigned long sum = 0;
    for (int i = 0; i < SLOTS; i++) sum = sum * 31 + (unsigned long)slots[i];
    for (int i = 0; i < LOCKS; i++) sum = sum * 7 + (unsigned long)last_writer[i];
    printf("checksum %lx\n", sum);
    return 0;
}
