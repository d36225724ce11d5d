/* Values from outside: time, clock_gettime, gettimeofday, getpid, getppid,
 * gettid, and rand
 * seeded from them, called from several threads; and the processor times
 * (clock, times, getrusage) and C11 timespec_get, which glibc reads inside
 * libc, and the load averages and free memory of getloadavg, sysinfo,
 * sysconf(_SC_AVPHYS_PAGES) and get_avphys_pages (BOTS prints the load
 * average), and the random bytes of getentropy and glibc 2.36's arc4random
 * family, which glibc takes from the kernel inside libc. Replay must return the recorded values. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <sys/times.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define THREADS 2

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static char lines[THREADS][256];

static void *worker(void *arg) {
    long id = (long)arg;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int a = rand(), b = rand();
    long r = random();
    int tid = gettid() - getpid();
    pthread_mutex_lock(&m);
    snprintf(lines[id], sizeof lines[id], "thread %ld mono %ld.%09ld rand %d %d random %ld tid +%d",
             id, (long)ts.tv_sec, ts.tv_nsec, a, b, r, tid);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void) {
    time_t now = time(NULL);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    int pid = getpid();
    srand((unsigned)(ts.tv_nsec ^ tv.tv_usec ^ pid));
    srandom((unsigned)(ts.tv_nsec * 7 + now));
    printf("time %ld realtime %ld.%09ld tod %ld.%06ld pid %d ppid %d tid %d\n", (long)now,
           (long)ts.tv_sec, ts.tv_nsec, (long)tv.tv_sec, (long)tv.tv_usec, pid, getppid(),
           gettid() - pid);
    printf("main rand %d %d\n", rand(), rand());
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) printf("%s\n", lines[i]);
    volatile double spin = 0;
    for (int i = 0; i < 200000; i++) spin += i * 0.5;
    struct tms tm;
    clock_t ticks = times(&tm);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    struct timespec c11;
    timespec_get(&c11, TIME_UTC);
    printf("clock %ld times %ld %ld %ld rusage %ld.%06ld %ld maxrss %ld c11 %ld.%09ld\n",
           (long)clock(), (long)ticks, (long)tm.tms_utime, (long)tm.tms_stime,
           (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec, ru.ru_minflt, ru.ru_maxrss,
           (long)c11.tv_sec, c11.tv_nsec);
    double loads[3] = {-1, -1, -1};
    int samples = getloadavg(loads, 3);
    struct sysinfo si;
    int si_ret = sysinfo(&si);
    printf("loadavg %d %.6f %.6f %.6f sysinfo %d uptime %ld freeram %lu procs %u free pages %ld %ld\n",
           samples, loads[0], loads[1], loads[2], si_ret, si.uptime, si.freeram, si.procs,
           sysconf(_SC_AVPHYS_PAGES), get_avphys_pages());
    unsigned char entropy[8], bytes[8];
    int got = getentropy(entropy, sizeof entropy);
    printf("getentropy %d %02x%02x%02x%02x\n", got, entropy[0], entropy[1], entropy[2], entropy[3]);
#if __GLIBC_PREREQ(2, 36)
    arc4random_buf(bytes, sizeof bytes);
    unsigned a = arc4random(), u = arc4random_uniform(1000);
    printf("arc4random %u %u %02x%02x%02x%02x\n", a, u, bytes[0], bytes[1], bytes[2], bytes[3]);
#else
    (void)bytes;
#endif
    return 0;
}
