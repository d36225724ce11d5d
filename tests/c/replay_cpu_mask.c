/* A program that sizes its work by the CPUs it may run on, as OpenMP
 * runtimes and thread pools do: one worker per CPU of its mask (read with
 * sched_getaffinity and pthread_getaffinity_np), each summing its share of
 * a shared array and reporting the CPU it ran on (sched_getcpu). Replay may
 * run the threads on other CPUs (replay --one-cpu): the program must see
 * the recorded mask and CPU numbers, or it starts another number of
 * threads and prints other values. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_WORKERS 64
#define N 200000

static long data[N];
static long sums[MAX_WORKERS];
static int where[MAX_WORKERS];
static int workers;

static void *worker(void *arg) {
    long id = (long)arg;
    where[id] = sched_getcpu() >= 0;
    for (long i = id; i < N; i += workers)
        sums[id] += data[i];
    return NULL;
}

int main(void) {
    cpu_set_t mask, thread_mask;
    if (sched_getaffinity(0, sizeof mask, &mask) != 0 ||
        pthread_getaffinity_np(pthread_self(), sizeof thread_mask, &thread_mask) != 0) {
        perror("affinity");
        return 1;
    }
    workers = CPU_COUNT(&mask);
    if (workers > MAX_WORKERS)
        workers = MAX_WORKERS;
    printf("cpus %d (thread's mask %d, equal %d)\n", workers, CPU_COUNT(&thread_mask),
           CPU_EQUAL(&mask, &thread_mask));
    for (long i = 0; i < N; i++)
        data[i] = i % 7;
    pthread_t t[MAX_WORKERS];
    for (long i = 0; i < workers; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    long total = 0;
    int cpus_known = 0;
    for (long i = 0; i < workers; i++) {
        pthread_join(t[i], NULL);
        total += sums[i];
        cpus_known += where[i];
    }
    printf("workers %d sum %ld cpus known %d cpu now %d\n", workers, total, cpus_known,
           sched_getcpu());
    return 0;
}
