/* A program with its own SIGSEGV handler (a crash reporter) that reads the
 * clock and the time-stamp counter: the runtime traps counter reads with
 * SIGSEGV, so its handler must stay installed and pass real faults on to the
 * program's. usage: own_segv_handler signal|sysv|sigaction [fault] */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

extern __sighandler_t __sysv_signal(int, __sighandler_t);

static volatile int caught;

static void on_segv(int sig) {
    (void)sig;
    caught = 1;
    static const char msg[] = "caught the fault\n";
    write(1, msg, sizeof msg - 1);
    _exit(3);
}

static void *clock_reader(void *arg) {
    struct timespec t;
    unsigned long long sum = 0;
    for (int i = 0; i < 200; i++) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        sum += __rdtsc() & 1;
    }
    return (void *)(long)(sum + (unsigned long long)t.tv_nsec % 2);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    struct sigaction old;
    sigaction(SIGSEGV, NULL, &old);
    if (old.sa_handler != SIG_DFL) return 4;
    if (!strcmp(argv[1], "signal")) {
        signal(SIGSEGV, on_segv);
    } else if (!strcmp(argv[1], "sysv")) {
        __sysv_signal(SIGSEGV, on_segv);
    } else {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = on_segv;
        sigaction(SIGSEGV, &action, NULL);
    }
    sigaction(SIGSEGV, NULL, &old);
    if (old.sa_handler != on_segv) return 5;
    pthread_t t;
    pthread_create(&t, 0, clock_reader, 0);
    clock_reader(0);
    pthread_join(t, 0);
    printf("read the clock, handler %s\n", caught ? "ran" : "idle");
    fflush(stdout);
    if (argc > 2) {
        volatile int *nowhere = (volatile int *)(long)(argc - 3);
        *nowhere = 1;
    }
    return 0;
}
