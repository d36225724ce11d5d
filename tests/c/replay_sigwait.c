/* A thread waits in sigwait() for a signal that the main thread sends it
 * with pthread_kill() only after joining its workers (pbzip2's signal
 * thread). The sending is no event: the waiter's first event after waking
 * must come after what the sender did before, or replay makes the
 * workers' exits wait for it and deadlocks. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

static sigset_t wanted;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void *signal_thread(void *arg) {
    (void)arg;
    int sig = 0;
    sigwait(&wanted, &sig);
    return (void *)(long)sig;
}

static void *worker(void *arg) {
    long id = (long)arg, sum = 0;
    for (long i = 0; i < 1000; i++)
        sum += i * id;
    pthread_mutex_lock(&lock);
    total += sum;
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void) {
    sigemptyset(&wanted);
    sigaddset(&wanted, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &wanted, NULL);
    pthread_t waiter, workers[3];
    pthread_create(&waiter, NULL, signal_thread, NULL);
    for (long i = 0; i < 3; i++)
        pthread_create(&workers[i], NULL, worker, (void *)(i + 1));
    for (int i = 0; i < 3; i++)
        pthread_join(workers[i], NULL);
    pthread_kill(waiter, SIGUSR1);
    void *sig;
    pthread_join(waiter, &sig);
    printf("total %ld signal %s\n", total, (long)sig == SIGUSR1 ? "SIGUSR1" : "other");
    return 0;
}
