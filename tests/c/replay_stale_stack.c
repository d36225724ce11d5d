/* Locals read before they are written: what a function finds in them is
 * what the last deeper call left on the stack. PARSEC's raytrace sums a
 * dot product into an uninitialised float (RTVec.hxx `dot`), and the
 * runtime's hooks, whose record, replay and verifying paths leave other
 * values at other depths, had been there last: a replay computed a NaN
 * camera and diverged a frame later. The runtime runs on a stack of its
 * own, so the program's stack holds what the program wrote, the same at
 * record and replay. Only the threads print what they find: below main's
 * frame lies what the loader left, which differs natively from run to run
 * (the stack canary). Undefined behaviour, on purpose. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

/* Sums 4 KiB of stack the function never writes. */
__attribute__((noinline)) static unsigned long leftover(void) {
    volatile unsigned long junk[512];
    unsigned long sum = 0;
    for (int i = 0; i < 512; i++)
        sum = sum * 31 + junk[i];
    return sum;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int shared;

static void *worker(void *arg) {
    /* Right after the thread's registration, then after contended locks. */
    unsigned long first = leftover();
    for (int i = 0; i < 2000; i++) {
        pthread_mutex_lock(&lock);
        shared++;
        pthread_mutex_unlock(&lock);
    }
    printf("thread %ld: %lx %lx\n", (long)arg, first, leftover());
    return NULL;
}

int main(void) {
    /* A recorded value: record asks the kernel, replay reads the trace. */
    time_t now = time(NULL);
    (void)now;
    pthread_t threads[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    printf("%d\n", shared);
    return 0;
}
