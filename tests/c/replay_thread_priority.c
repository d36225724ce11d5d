/* A thread renices itself by its thread id, through the wrapper and the raw
 * system call: at replay the program knows the recorded id (gettid replays
 * it), which names no thread of the replay, or another process; the calls
 * must reach the replayed thread and succeed as recorded. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *worker(void *arg) {
    (void)arg;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    int set = setpriority(PRIO_PROCESS, (id_t)tid, 5);
    int nice_now = getpriority(PRIO_PROCESS, (id_t)tid);
    long raw_set = syscall(SYS_setpriority, PRIO_PROCESS, tid, 6);
    int raw_nice = getpriority(PRIO_PROCESS, (id_t)gettid());
    printf("setpriority %d nice %d raw %ld nice %d\n", set, nice_now, raw_set, raw_nice);
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    return 0;
}
