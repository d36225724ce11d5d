#define _GNU_SOURCE
/* Threads whose dlopen and dlsym fail, again and again, each reading the
 * message with dlerror, while main creates and joins short threads. Three
 * ways glibc's own bookkeeping, which no hook sees, could set replay on
 * another path:
 * - A thread's last dlerror message is freed by glibc's clean-up after
 *   the thread's exit event, when the others are wherever timing has them:
 *   put back on a free list, that block went to whichever allocation came
 *   next (a replay diverged in every run with two such threads).
 * - pthread_create takes the loader's TLS lock, which a failing dlopen
 *   holds while it allocates its message: unordered, a replay could
 *   deadlock (the opener's allocation waiting for the creation, the
 *   creation for the lock).
 * - dlsym in RTLD_DEFAULT takes the loader's lock and allocates its
 *   message inside it too, and is ordered like dlopen for that (through a
 *   return address in the caller's object, which its answer depends on). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define OPENERS 2
#define ROUNDS 300

static void *nothing(void *arg) { return arg; }

static void *opener(void *arg) {
    long errors = 0;
    for (int i = 0; i < ROUNDS; i++) {
        if (!dlopen("librr-lite-no-such-library.so", RTLD_NOW)) errors += dlerror() != NULL;
        if (!dlsym(RTLD_DEFAULT, "rr_lite_no_such_symbol")) errors += dlerror() != NULL;
        free(malloc(16 + (size_t)i));
    }
    return (void *)errors;
}

int main(void) {
    pthread_t o[OPENERS];
    for (long i = 0; i < OPENERS; i++) pthread_create(&o[i], NULL, opener, NULL);
    for (int i = 0; i < 50; i++) {
        pthread_t t;
        pthread_create(&t, NULL, nothing, NULL);
        pthread_join(t, NULL);
    }
    long errors = 0;
    for (int i = 0; i < OPENERS; i++) {
        void *r;
        pthread_join(o[i], &r);
        errors += (long)r;
    }
    printf("dlopen failed and dlerror said why %ld times\n", errors);
    return 0;
}
