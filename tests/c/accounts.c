/* Mutex-protected transfers between accounts (one mutex per account, taken
 * in index order); the total is an invariant checked at the end.
 * Exit status 0 when the total is intact, 1 otherwise. */
#include <pthread.h>
#include <stdio.h>

#define ACCOUNTS 6
#define TELLERS 4
#define TRANSFERS 400

static long balance[ACCOUNTS];
static pthread_mutex_t lock[ACCOUNTS];
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long transfers_done;

static void *teller(void *arg) {
    unsigned seed = (unsigned)(long)arg * 2654435761u + 1;
    long done = 0;
    for (int i = 0; i < TRANSFERS; i++) {
        seed = seed * 1103515245u + 12345u;
        int from = (int)((seed >> 8) % ACCOUNTS), to = (int)((seed >> 20) % ACCOUNTS);
        if (from == to) to = (to + 1) % ACCOUNTS;
        int a = from < to ? from : to, b = from < to ? to : from;
        pthread_mutex_lock(&lock[a]);
        pthread_mutex_lock(&lock[b]);
        long amount = (long)(seed % 50);
        if (balance[from] >= amount) {
            balance[from] -= amount;
            balance[to] += amount;
            done++;
        }
        pthread_mutex_unlock(&lock[b]);
        pthread_mutex_unlock(&lock[a]);
    }
    pthread_mutex_lock(&stats_lock);
    transfers_done += done;
    pthread_mutex_unlock(&stats_lock);
    return NULL;
}

int main(void) {
    pthread_t t[TELLERS];
    for (int i = 0; i < ACCOUNTS; i++) {
        balance[i] = 1000;
        pthread_mutex_init(&lock[i], NULL);
    }
    for (long i = 0; i < TELLERS; i++) pthread_create(&t[i], NULL, teller, (void *)i);
    for (int i = 0; i < TELLERS; i++) pthread_join(t[i], NULL);
    long total = 0;
    for (int i = 0; i < ACCOUNTS; i++) total += balance[i];
    printf("total %ld\n", total);
    printf("transfers %s\n", transfers_done > 0 ? "some" : "none");
    return total == ACCOUNTS * 1000 ? 0 : 1;
}
