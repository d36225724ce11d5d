/* A 1-D three-point stencil computed by several threads, each owning a
 * slice, with two barriers per iteration (compute, then copy back). Integer
 * arithmetic, so the checksum is exact and the same on every run. */
#include <pthread.h>
#include <stdio.h>

#define N 256
#define THREADS 4
#define ITERATIONS 10

static long cur[N + 2], nxt[N + 2];
static pthread_barrier_t barrier;

static void *worker(void *arg) {
    int id = (int)(long)arg;
    int lo = 1 + id * (N / THREADS), hi = lo + N / THREADS;
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = lo; i < hi; i++) nxt[i] = (cur[i - 1] + 2 * cur[i] + cur[i + 1]) % 1000003;
        pthread_barrier_wait(&barrier);
        for (int i = lo; i < hi; i++) cur[i] = nxt[i];
        pthread_barrier_wait(&barrier);
    }
    return NULL;
}

static long serial(void) {
    static long a[N + 2], b[N + 2];
    for (int i = 1; i <= N; i++) a[i] = i * 7 % 101;
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 1; i <= N; i++) b[i] = (a[i - 1] + 2 * a[i] + a[i + 1]) % 1000003;
        for (int i = 1; i <= N; i++) a[i] = b[i];
    }
    long sum = 0;
    for (int i = 1; i <= N; i++) sum += a[i] * i;
    return sum;
}

int main(void) {
    pthread_t t[THREADS];
    for (int i = 1; i <= N; i++) cur[i] = i * 7 % 101;
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    long sum = 0;
    for (int i = 1; i <= N; i++) sum += cur[i] * i;
    long want = serial();
    printf("checksum %ld\n", sum);
    return sum == want ? 0 : 1;
}
