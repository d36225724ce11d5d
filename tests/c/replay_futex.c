/* Two threads hand a token back and forth through futex waits and wakes
 * made with syscall(SYS_futex), as libstdc++'s headers do for C++20's
 * semaphores and atomic::wait: whether a wait slept, found the word
 * changed (EAGAIN) or was woken decides what each thread does next, and
 * the counts are printed. Usage: replay_futex [ROUNDS] */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic int turn;
static long rounds = 2000;
static long changed[2], woken[2], wakes[2];

static void wait_while(int me, int value) {
    while (atomic_load(&turn) == value) {
        long r = syscall(SYS_futex, &turn, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
        if (r == -1 && errno == EAGAIN)
            changed[me]++;
        else if (r == 0)
            woken[me]++;
    }
}

static void pass(int me, int to) {
    atomic_store(&turn, to);
    wakes[me] += syscall(SYS_futex, &turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *player(void *arg) {
    int me = (int)(long)arg;
    for (long i = 0; i < rounds; i++) {
        wait_while(me, !me);
        pass(me, !me);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) rounds = atol(argv[1]);
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, player, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("changed %ld %ld woken %ld %ld wakes %ld %ld\n", changed[0], changed[1], woken[0],
           woken[1], wakes[0], wakes[1]);
    return 0;
}
