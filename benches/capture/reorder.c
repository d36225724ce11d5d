/* Two-variable reorder: setters write a then b; checkers expect to see
 * both or neither. A checker that runs between a setter's two writes sees
 * one without the other. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define SETTERS 2
#define CHECKERS 2

static volatile int a, b;

static void *setter(void *arg) {
    (void)arg;
    a = 1;
    b = -1;
    return NULL;
}

static void *checker(void *arg) {
    (void)arg;
    int sa = a, sb = b;
    if (!((sa == 0 && sb == 0) || (sa == 1 && sb == -1))) {
        fprintf(stderr, "reorder: saw a=%d b=%d\n", sa, sb);
        abort();
    }
    return NULL;
}

int main(void) {
    pthread_t t[SETTERS + CHECKERS];
    for (int i = 0; i < SETTERS; i++)
        pthread_create(&t[i], NULL, setter, NULL);
    for (int i = 0; i < CHECKERS; i++)
        pthread_create(&t[SETTERS + i], NULL, checker, NULL);
    for (int i = 0; i < SETTERS + CHECKERS; i++)
        pthread_join(t[i], NULL);
    puts("ok");
    return 0;
}
