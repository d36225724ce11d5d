/* A crash that depends on a race: two threads do the same work after a
 * common start, then race to finish first (an atomic exchange). Thread A
 * nulls the shared pointer before it finishes; if A finished first, B
 * dereferences the NULL pointer and dies of SIGSEGV; if B finished first,
 * the program prints the value and exits normally. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static int x = 42;
static int *volatile p = &x;
static int first;
static volatile long work[2];
static pthread_barrier_t start;

__attribute__((noinline)) static void some_work(int id) {
    for (int i = 0; i < 20; i++) {
        work[id] += i;
        if (i % 5 == 0) sched_yield();
    }
}

static void *thread_a(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    some_work(0);
    p = NULL;
    __atomic_exchange_n(&first, 1, __ATOMIC_ACQ_REL);
    return NULL;
}

static void *thread_b(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    some_work(1);
    if (__atomic_exchange_n(&first, 2, __ATOMIC_ACQ_REL) != 0)
        printf("B second, value %d\n", *p); /* A nulled p: SIGSEGV */
    else
        printf("B first\n");
    return NULL;
}

int main(void) {
    pthread_barrier_init(&start, NULL, 2);
    pthread_t a, b;
    pthread_create(&a, NULL, thread_a, NULL);
    pthread_create(&b, NULL, thread_b, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("survived\n");
    return 0;
}
