// Four threads bump a 16-byte counted pointer with compare-and-swap loops,
// as C++'s std::atomic<struct { int count; node *ptr; }> does in lock-free
// stacks. The expected value is a plain struct, aligned to 8, not 16: the
// runtime's 128-bit compare-and-swap read it as an aligned 16-byte integer
// and every run of the instrumented program crashed (C++ Concurrency in
// Action's lock-free stack, listing 7.13), recorded or not.
#include <pthread.h>
#include <stdio.h>

struct counted { long count; void *ptr; };
/* `expected` 8 bytes into the struct: 8-aligned only. */
struct attempt { long tries; struct counted expected; };

_Alignas(16) static struct counted top = {0, 0};

static void *bump(void *arg) {
    struct attempt a = {0, {0, 0}};
    for (int i = 0; i < 20000; i++) {
        __atomic_load(&top, &a.expected, __ATOMIC_ACQUIRE);
        struct counted next;
        do {
            a.tries++;
            next.count = a.expected.count + 1;
            next.ptr = arg;
        } while (!__atomic_compare_exchange(&top, &a.expected, &next, 1, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE));
    }
    return (void *)a.tries;
}

int main(void) {
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, bump, (void *)(i + 1));
    long tries = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        tries += (long)r;
    }
    printf("count %ld, last by thread %ld, %ld tries\n", top.count, (long)top.ptr, tries);
    return 0;
}
