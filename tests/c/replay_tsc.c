/* Reads the time-stamp counter with rdtsc and rdtscp (instructions, not
 * calls: interposition cannot see them) in several threads, and prints
 * values derived from it next to a clock_gettime reading (whose vDSO code
 * reads the counter too). The output differs from run to run and must be
 * the recorded one at replay. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static uint64_t rdtsc(void) {
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

static uint64_t rdtscp(void) {
    uint32_t lo, hi, aux;
    __asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
    return ((uint64_t)hi << 32 | lo) + aux;
}

static uint64_t samples[4];

static void *worker(void *arg) {
    long i = (long)arg;
    uint64_t a = rdtsc();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t b = rdtscp();
    samples[i] = (b - a) ^ (uint64_t)ts.tv_nsec;
    return NULL;
}

int main(void) {
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    uint64_t h = rdtsc();
    for (int i = 0; i < 4; i++) h = h * 31 + samples[i];
    printf("tsc mix %llu\n", (unsigned long long)(h % 1000003));
    return 0;
}
