/* Order violation: the worker uses a buffer main allocates just after
 * creating it. Natively main almost always wins; the worker fails when it
 * runs first. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int *volatile buffer;

static void *worker(void *arg) {
    (void)arg;
    if (buffer == NULL) {
        fprintf(stderr, "order_violation: worker ran before the buffer existed\n");
        exit(1);
    }
    buffer[0] = 42;
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    buffer = calloc(16, sizeof(int));
    pthread_join(t, NULL);
    printf("ok %d\n", buffer[0]);
    return 0;
}
