/* The bundled demo: four tellers move money between accounts.
 * `audit` races with the transfers (it reads balances without the lock), and
 * the tellers bump `ops` without synchronisation, so what the program prints
 * depends on the interleaving of this run. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ACCOUNTS 8
#define TELLERS 4
#define TRANSFERS 5000

static long balance[ACCOUNTS];
static pthread_mutex_t lock[ACCOUNTS];
static long ops; /* racy on purpose */

static void *teller(void *arg) {
    long id = (long)arg;
    unsigned seed = (unsigned)id * 7919u + 1;
    for (int i = 0; i < TRANSFERS; i++) {
        ops++;
        seed = seed * 1103515245u + 12345u;
        int from = (int)(seed >> 8) % ACCOUNTS, to = (int)(seed >> 16) % ACCOUNTS;
        if (from == to) continue;
        int a = from < to ? from : to, b = from < to ? to : from;
        pthread_mutex_lock(&lock[a]);
        pthread_mutex_lock(&lock[b]);
        balance[from] -= 10;
        balance[to] += 10;
        pthread_mutex_unlock(&lock[b]);
        pthread_mutex_unlock(&lock[a]);
    }
    printf("teller %ld done\n", id);
    return NULL;
}

static void *audit(void *arg) {
    (void)arg;
    long seen = 0;
    for (int round = 0; round < 200; round++) {
        long total = 0;
        for (int i = 0; i < ACCOUNTS; i++) total += balance[i]; /* racy read */
        if (total != ACCOUNTS * 1000) seen++;
    }
    printf("auditor saw %ld inconsistent totals\n", seen);
    return NULL;
}

int main(void) {
    pthread_t t[TELLERS + 1];
    for (int i = 0; i < ACCOUNTS; i++) {
        balance[i] = 1000;
        pthread_mutex_init(&lock[i], NULL);
    }
    for (long i = 0; i < TELLERS; i++) pthread_create(&t[i], NULL, teller, (void *)i);
    pthread_create(&t[TELLERS], NULL, audit, NULL);
    for (int i = 0; i <= TELLERS; i++) pthread_join(t[i], NULL);
    long total = 0;
    for (int i = 0; i < ACCOUNTS; i++) total += balance[i];
    printf("total %ld, operations counted %ld of %d\n", total, ops, TELLERS * TRANSFERS);
    return 0;
}
