/* Starts a thread through libc's own pthread_create, found with dlsym on
 * libc itself: the path a library with its own thread pool could take, which
 * the runtime's interposition does not see. The thread runs instrumented
 * code (it writes `shared`), so the recording cannot be complete. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static int shared;

static void *worker(void *arg) {
    (void)arg;
    shared = 42;
    return NULL;
}

int main(void) {
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    if (!libc) return 3;
    int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
        (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(libc, "pthread_create");
    if (!create) return 4;
    pthread_t t;
    if (create(&t, NULL, worker, NULL) != 0) return 5;
    pthread_join(t, NULL);
    printf("shared %d\n", shared);
    return 0;
}
