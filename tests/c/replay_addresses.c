/* Prints the addresses of heap blocks allocated by several threads (in a
 * racy order), of a stack variable in each thread, and of a global; replay
 * must reproduce every address. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 3

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int global;
static char lines[THREADS][4][96];

static void *worker(void *arg) {
    long id = (long)arg;
    int local = (int)id;
    for (int i = 0; i < 4; i++) {
        char *buf = malloc(32 + 16 * (size_t)i + 8 * (size_t)id);
        char *z = calloc(4, 24);
        buf = realloc(buf, 200 + (size_t)i);
        memset(buf, 'x', 10);
        pthread_mutex_lock(&m);
        snprintf(lines[id][i], sizeof lines[id][i], "thread %ld malloc %p calloc %p stack %p", id,
                 (void *)buf, (void *)z, (void *)&local);
        pthread_mutex_unlock(&m);
        if (i % 2) free(z);
        sched_yield();
    }
    return NULL;
}

int main(void) {
    int local = 0;
    char *mine = malloc(100);
    printf("main malloc %p stack %p global %p\n", (void *)mine, (void *)&local, (void *)&global);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        for (int j = 0; j < 4; j++) printf("%s\n", lines[i][j]);
    char *after = malloc(64);
    printf("main after %p\n", (void *)after);
    free(mine);
    return 0;
}
