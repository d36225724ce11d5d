/* main returns without joining: three workers print a line each, and a
 * fourth thread spins for ever. Under PCT the workers finish before the
 * process ends (the exiting thread waits below every other), and the
 * spinner does not keep it from ending. */
#include <pthread.h>
#include <unistd.h>

static volatile int never_set;

static void *worker(void *arg) {
    char line[] = "worker ?\n";
    line[7] = (char)('0' + (long)arg);
    if (write(1, line, sizeof line - 1) < 0)
        return NULL;
    return NULL;
}

static void *spinner(void *arg) {
    (void)arg;
    while (!never_set) {
    }
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, spinner, NULL);
    for (long i = 0; i < 3; i++)
        pthread_create(&t, NULL, worker, (void *)i);
    return 0;
}
