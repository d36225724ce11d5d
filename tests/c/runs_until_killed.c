/* Two threads that count forever: a recording that only ends when it is
 * stopped from outside. */
#include <pthread.h>
#include <unistd.h>

static volatile long counter;

static void *count(void *arg) {
    for (;;) {
        counter++;
        if (counter % 100000 == 0) usleep(100);
    }
    return arg;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, count, NULL);
    pthread_create(&b, NULL, count, NULL);
    pthread_join(a, NULL);
    return 0;
}
