/* Lost updates in `sum += x` with nothing between the read and the write:
 * clang's thread sanitizer leaves the read of such a pair uninstrumented
 * unless told otherwise, and a replay that orders only the writes gives
 * another sum. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 2000

static volatile long sum;

static void *add(void *arg) {
    long me = (long)arg;
    for (int i = 0; i < ROUNDS; i++) sum += me + 1;
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, add, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    printf("sum %ld\n", sum);
    return 0;
}
