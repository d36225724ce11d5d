/* Enters a Landlock sandbox that refuses new files, then starts threads (as
 * xz >= 5.4 does): the runtime cannot create their logs in the trace
 * directory, nor write its notes there. The trace must still say it is
 * incomplete, and why, and replay refuse it (it hung before). Prints
 * "no landlock" and exits 0 where the kernel has no Landlock. */
#define _GNU_SOURCE
#include <linux/landlock.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *worker(void *arg) {
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&lock);
        counter += (long)arg;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void) {
    struct landlock_ruleset_attr attr = {
        .handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_MAKE_REG,
    };
    int ruleset = syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (ruleset < 0) {
        printf("no landlock\n");
        return 0;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 2;
    if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) return 3;
    close(ruleset);
    pthread_t t[3];
    for (long i = 0; i < 3; i++) pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    printf("counter %ld\n", counter);
    return 0;
}
