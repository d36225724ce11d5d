/* Lock-heavy: every thread moves money between random accounts, taking the
 * two account mutexes in address order around a tiny critical section. The
 * total is conserved; the final balances depend on the interleaving.
 * usage: transfers [SIZE=4000 transfers per thread] [THREADS=4] */
#include "common.h"

#define ACCOUNTS 16

static long size, threads;
static long balance[ACCOUNTS];
static pthread_mutex_t lock[ACCOUNTS];

static void *teller(void *arg) {
    unsigned seed = (unsigned)(long)arg * 7919u + 1u;
    for (long i = 0; i < size; i++) {
        seed = seed * 1103515245u + 12345u;
        int from = (int)((seed >> 8) % ACCOUNTS), to = (int)((seed >> 16) % ACCOUNTS);
        if (from == to) to = (to + 1) % ACCOUNTS;
        int lo = from < to ? from : to, hi = from < to ? to : from;
        long amount = (long)(seed >> 24) % 50;
        pthread_mutex_lock(&lock[lo]);
        pthread_mutex_lock(&lock[hi]);
        if (balance[from] >= amount) {
            balance[from] -= amount;
            balance[to] += amount;
        }
        pthread_mutex_unlock(&lock[hi]);
        pthread_mutex_unlock(&lock[lo]);
    }
    return NULL;
}

int main(int argc, char **argv) {
    size = arg_or(argc, argv, 1, 4000, 1, 1L << 28);
    threads = arg_or(argc, argv, 2, 4, 1, MAX_THREADS);
    for (int i = 0; i < ACCOUNTS; i++) {
        balance[i] = 1000;
        pthread_mutex_init(&lock[i], NULL);
    }
    run_threads((int)threads, teller);
    long total = 0, hash = 0;
    for (int i = 0; i < ACCOUNTS; i++) {
        total += balance[i];
        hash = hash * 31 + balance[i];
    }
    printf("transfers size=%ld threads=%ld total=%ld balances=%ld\n", size, threads, total, hash);
    return total == ACCOUNTS * 1000 ? 0 : 1;
}
