/* Signals a program sends itself by id: kill(getpid()) to the process,
 * tgkill(getpid(), tid) and syscall(SYS_tgkill, ...) to threads that
 * published their gettid() / syscall(SYS_gettid). At replay the program is
 * handed the recorded ids, which name another process or none on the
 * machine that replays: the signals must still reach this one (each waited
 * for with sigtimedwait, a timeout printed if one did not come). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 2

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t published = PTHREAD_COND_INITIALIZER;
static pid_t tids[WORKERS];
static int got[WORKERS];

static int wait_for(int sig) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    struct timespec limit = {5, 0};
    return sigtimedwait(&set, NULL, &limit);
}

static void *worker(void *arg) {
    long id = (long)arg;
    pid_t tid = id == 0 ? gettid() : (pid_t)syscall(SYS_gettid);
    pthread_mutex_lock(&m);
    tids[id] = tid;
    pthread_cond_broadcast(&published);
    pthread_mutex_unlock(&m);
    int sig = wait_for(SIGUSR2);
    pthread_mutex_lock(&m);
    got[id] = sig;
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void) {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigaddset(&block, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &block, NULL);
    pid_t pid = getpid();
    pthread_t t[WORKERS];
    for (long i = 0; i < WORKERS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    pthread_mutex_lock(&m);
    for (int i = 0; i < WORKERS; i++)
        while (tids[i] == 0) pthread_cond_wait(&published, &m);
    pthread_mutex_unlock(&m);
    int sent0 = tgkill(pid, tids[0], SIGUSR2);
    int sent1 = (int)syscall(SYS_tgkill, pid, tids[1], SIGUSR2);
    int sent = kill(pid, SIGUSR1);
    int self = wait_for(SIGUSR1);
    for (int i = 0; i < WORKERS; i++) pthread_join(t[i], NULL);
    printf("pid %d tids %d %d\n", pid, tids[0] - pid, tids[1] - pid);
    printf("sent %d %d %d; process got %s\n", sent0, sent1, sent,
           self == SIGUSR1 ? "SIGUSR1" : "nothing");
    for (int i = 0; i < WORKERS; i++)
        printf("worker %d got %s\n", i, got[i] == SIGUSR2 ? "SIGUSR2" : "nothing");
    return 0;
}
