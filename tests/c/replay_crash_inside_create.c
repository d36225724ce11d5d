// The recording ends inside a pthread_create, after the create's turn among
// the descriptor calls and before anything the real call does: here the
// call itself faults (its attributes' pointer is bad), as a crash in
// another thread would end it at that point at random (about one recording
// in sixteen of a thread crashing while main creates 31 others). Replay of
// such a create skipped that turn, and `--verify` reported a divergence
// where the recording has its crash.
#include <pthread.h>
#include <stdio.h>

static void *work(void *arg) { return arg; }

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, work, NULL);
    pthread_join(t, NULL);
    puts("created and joined one thread");
    fflush(stdout);
    pthread_create(&t, (pthread_attr_t *)8, work, NULL); /* SIGSEGV inside */
    puts("not reached");
    return 0;
}
