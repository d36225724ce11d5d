/* A thread dies of SIGSEGV while the main thread writes to stdout: how much
 * was written before the crash depends on the race, and replay must write
 * exactly what the recording wrote, then die of the same signal. */
#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

static sem_t go;
static int *volatile nowhere;

static void *crasher(void *arg) {
    (void)arg;
    sem_wait(&go);
    *nowhere = 1; /* SIGSEGV */
    return NULL;
}

int main(void) {
    sem_init(&go, 0, 0);
    pthread_t t;
    pthread_create(&t, NULL, crasher, NULL);
    sem_post(&go);
    for (int i = 0; i < 100000; i++)
        if (write(1, "x", 1) != 1) return 1;
    pthread_join(t, NULL);
    return 0;
}
