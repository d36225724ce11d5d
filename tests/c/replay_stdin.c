/* Two threads take turns reading lines from standard input (through stdio)
 * and tag each line with their number: the input, and which thread got
 * which line, must be the recorded ones at replay, with no input given. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char out[64][80];
static int n;

static void *reader(void *arg) {
    long me = (long)arg;
    char line[64];
    for (;;) {
        pthread_mutex_lock(&lock);
        char *got = fgets(line, sizeof line, stdin);
        if (got && n < 64) {
            line[strcspn(line, "\n")] = 0;
            snprintf(out[n++], sizeof out[0], "%ld:%s", me, line);
        }
        pthread_mutex_unlock(&lock);
        if (!got) return NULL;
    }
}

int main(void) {
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, reader, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < n; i++) printf("%s\n", out[i]);
    return 0;
}
