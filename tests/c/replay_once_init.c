/* One-time initialisation reached by four threads at once: pthread_once,
 * C11 call_once, and a C++ function-local static's guard as g++ emits it
 * (an inline acquire load of the guard's first byte, then
 * __cxa_guard_acquire / __cxa_guard_release from libstdc++; built with
 * GUARD=1 and linked with libstdc++). glibc and libstdc++ keep their
 * state out of the hooks' sight: replay must still let the recorded
 * thread build each table, the others find it built. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <threads.h>

#define THREADS 4
#define N 20000

static pthread_once_t once = PTHREAD_ONCE_INIT;
static once_flag c11_once = ONCE_FLAG_INIT;
static int *posix_table, *c11_table, *guarded_table;
static int builders[3];

static int *build(int k, int which) {
    int *t = malloc(N * sizeof *t);
    for (int i = 0; i < N; i++) t[i] = i * k;
    __atomic_fetch_add(&builders[which], 1, __ATOMIC_RELAXED);
    return t;
}
static void init_posix(void) { posix_table = build(2, 0); }
static void init_c11(void) { c11_table = build(3, 1); }

#ifdef GUARD
int __cxa_guard_acquire(long long *guard);
void __cxa_guard_release(long long *guard);
static long long guard;
static int *guarded(void) {
    if (!__atomic_load_n((char *)&guard, __ATOMIC_ACQUIRE) && __cxa_guard_acquire(&guard)) {
        guarded_table = build(5, 2);
        __cxa_guard_release(&guard);
    }
    return guarded_table;
}
#else
static int *guarded(void) {
    static int table[N];
    return table;
}
#endif

static long sums[THREADS];

static void *worker(void *arg) {
    long id = (long)arg, s = 0;
    for (int i = 0; i < 2000; i++) s += i % (id + 2);
    pthread_once(&once, init_posix);
    call_once(&c11_once, init_c11);
    s += posix_table[id * 10] + c11_table[id * 10] + guarded()[id * 10];
    sums[id] = s;
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    printf("sums %ld %ld %ld %ld built %d %d %d\n", sums[0], sums[1], sums[2], sums[3],
           builders[0], builders[1], builders[2]);
    return 0;
}
