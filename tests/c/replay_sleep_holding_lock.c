/* Main takes a spin lock, starts a thread that asks for it, and sleeps a
 * second before it lets go (Intel Pin's spin_lock_app, in SCTBench's
 * checkout, sleeps ten). At replay the thread waits for main's unlock
 * while main sleeps in the kernel: the watchdog must not take that for a
 * deadlock (it did, after two seconds: a sleeping thread counted as stuck
 * whenever another waited). */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_spinlock_t lock;

static void *child(void *arg) {
    (void)arg;
    printf("child: asking for the lock\n");
    fflush(stdout);
    pthread_spin_lock(&lock);
    printf("child: has the lock\n");
    pthread_spin_unlock(&lock);
    return NULL;
}

int main(void) {
    pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE);
    pthread_spin_lock(&lock);
    pthread_t t;
    pthread_create(&t, NULL, child, NULL);
    usleep(1000000);
    printf("main: letting go\n");
    fflush(stdout);
    pthread_spin_unlock(&lock);
    pthread_join(t, NULL);
    return 0;
}
