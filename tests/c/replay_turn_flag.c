/* Two threads pass a turn back and forth through a plain volatile flag,
 * each polling it until its turn comes (no atomics, no locks; a yield
 * every 64 polls). Prints the
 * running sum (fixed) and how often each thread polled (differs run to
 * run): the replay must give every poll the value it read while recording.
 * usage: replay_turn_flag [TURNS] */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

static volatile int turn;
static volatile long sum;
static long turns = 2000;
static long polls[2];

static void *player(void *arg) {
    long me = (long)arg, polled = 0;
    for (long i = 0; i < turns; i++) {
        /* Spin, then yield: on a loaded machine the other thread may
         * have no CPU, and a pure spin would poll for a whole time slice. */
        while (turn != me)
            if (++polled % 64 == 0) sched_yield();
        sum = sum * 3 + i + me;
        turn = 1 - (int)me;
    }
    polls[me] = polled;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) turns = atol(argv[1]);
    pthread_t a, b;
    pthread_create(&a, NULL, player, (void *)0);
    pthread_create(&b, NULL, player, (void *)1);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("sum %ld polls %ld %ld\n", sum, polls[0], polls[1]);
    return 0;
}
