/* Several threads print lines with the whole stdio family (and write(2));
 * the order of the lines is the interleaving. stdout is line buffered so
 * each line reaches the pipe when it is complete. With the argument "lock"
 * the putchar lines are built under flockfile, so they stay whole. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int use_lock;

#define THREADS 3
#define LINES 6

static void *worker(void *arg) {
    long id = (long)arg;
    char line[64];
    for (int i = 0; i < LINES; i++) {
        switch ((id + i) % 5) {
        case 0:
            printf("thread %ld line %d printf\n", id, i);
            break;
        case 1:
            snprintf(line, sizeof line, "thread %ld line %d puts", id, i);
            puts(line);
            break;
        case 2:
            snprintf(line, sizeof line, "thread %ld line %d fputs\n", id, i);
            fputs(line, stdout);
            break;
        case 3:
            snprintf(line, sizeof line, "thread %ld line %d fwrite\n", id, i);
            fwrite(line, 1, strlen(line), stdout);
            break;
        default:
            if (use_lock) flockfile(stdout);
            snprintf(line, sizeof line, "thread %ld line %d putchar\n", id, i);
            for (char *c = line; *c; c++) putchar(*c);
            if (use_lock) funlockfile(stdout);
            break;
        }
        if (i % 2) sched_yield();
    }
    fflush(stdout);
    snprintf(line, sizeof line, "thread %ld write\n", id);
    if (write(1, line, strlen(line)) < 0) return (void *)1;
    return NULL;
}

int main(int argc, char **argv) {
    use_lock = argc > 1 && strcmp(argv[1], "lock") == 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    printf("main done\n");
    return 0;
}
