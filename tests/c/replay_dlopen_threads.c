/* Threads opening, searching and closing shared libraries at once, with
 * allocations between: dlopen, dlsym in a library (a missing symbol too:
 * the loader allocates its error message inside its lock) and dlclose
 * all take the loader's lock, which no hook sees. Replay must not give
 * that lock to a thread whose next allocation waits for another thread
 * blocked on it (every replay deadlocked while dlclose and dlsym were not
 * ordered). The `dlsym` wrapper keeps the caller that RTLD_NEXT's answer
 * depends on. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 3

static int found[THREADS], missing[THREADS], opened[THREADS];

static void *opener(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < 150; i++) {
        void *h = dlopen(i % 3 ? "libm.so.6" : "librr-lite-no-such-library.so", RTLD_NOW);
        if (h) {
            opened[id]++;
            if (dlsym(h, "cos")) found[id]++;
            if (!dlsym(h, "rr_lite_no_such_symbol")) missing[id] += dlerror() != NULL;
            dlclose(h);
        } else {
            missing[id] += dlerror() != NULL;
        }
        free(malloc(16 + (size_t)i));
    }
    return NULL;
}

int main(void) {
    /* Looked up from the program, RTLD_NEXT finds what follows it: the
     * same malloc as RTLD_DEFAULT (rr-lite's, or the C library's). */
    void *next = dlsym(RTLD_NEXT, "malloc"), *first = dlsym(RTLD_DEFAULT, "malloc");
    printf("RTLD_NEXT's malloc %s RTLD_DEFAULT's\n", next == first ? "is" : "is not");
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, opener, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        printf("opener %d: opened %d found %d missing %d\n", i, opened[i], found[i], missing[i]);
    return 0;
}
