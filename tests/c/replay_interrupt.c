/* Runs until interrupted: two threads count, main waits in pause(). The
 * test sends SIGINT to the recording's process group once "started" is
 * printed, as Ctrl-C in a terminal would. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static volatile long n;
static void *w(void *a) { for (;;) { n++; if (n % 100000 == 0) sched_yield(); } return a; }
int main(void) { pthread_t t[2]; for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, w, 0); printf("started\n"); fflush(stdout); for (;;) pause(); }
