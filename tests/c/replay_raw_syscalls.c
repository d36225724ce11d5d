/* Values from outside through the C library's syscall(): thread and process
 * ids, random bytes and clocks by number (as programs written before glibc
 * had wrappers for them ask), from several threads. Replay must return the
 * recorded values. A futex wait and wake through syscall() (a call rr-lite
 * passes on, as libomp's and libstdc++'s futexes) and a failing call's
 * errno must work as without rr-lite. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define THREADS 3

static char lines[THREADS][160];
static unsigned flag;

static void *worker(void *arg) {
    long id = (long)arg;
    long tid = syscall(SYS_gettid);
    unsigned char bytes[4] = {0};
    long got = syscall(SYS_getrandom, bytes, sizeof bytes, 0);
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    snprintf(lines[id], sizeof lines[id], "thread %ld tid %ld random %ld %02x%02x%02x%02x ns %ld",
             id, tid, got, bytes[0], bytes[1], bytes[2], bytes[3], ts.tv_nsec);
    if (id == 0) {
        struct timespec wait = {0, 20 * 1000 * 1000};
        while (__atomic_load_n(&flag, __ATOMIC_ACQUIRE) == 0)
            syscall(SYS_futex, &flag, FUTEX_WAIT_PRIVATE, 0, &wait, NULL, 0);
    }
    return NULL;
}

int main(void) {
    struct timeval tv;
    syscall(SYS_gettimeofday, &tv, NULL);
    printf("pid %ld ppid %ld tid %ld time %ld usec %ld\n", syscall(SYS_getpid),
           syscall(SYS_getppid), syscall(SYS_gettid), syscall(SYS_time, NULL),
           (long)tv.tv_usec);
    errno = 0;
    long closed = syscall(SYS_close, -1);
    printf("close(-1): %ld, %s\n", closed, errno == EBADF ? "EBADF" : "another errno");
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    __atomic_store_n(&flag, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &flag, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) printf("%s\n", lines[i]);
    return 0;
}
