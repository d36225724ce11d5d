/* One thread creates, renames and deletes a file again and again while
 * another asks the file system about it (stat, lstat, access, fstatat,
 * faccessat): the answers depend on the moment, and replay must make
 * these calls in the recorded order (SQLite checks for its journal as
 * another thread creates it). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROUNDS 3000

static char dir[] = "/tmp/rr-lite-test-status-XXXXXX";
static char path[64];
static volatile int started;

static void *churn(void *arg) {
    (void)arg;
    started = 1;
    for (int i = 0; i < ROUNDS; i++) {
        int fd = open(path, O_CREAT | O_WRONLY, 0644);
        if (fd >= 0)
            close(fd);
        if (i % 2)
            unlink(path);
        else {
            char moved[72];
            snprintf(moved, sizeof moved, "%s.old", path);
            rename(path, moved);
            unlink(moved);
        }
    }
    return NULL;
}

int main(void) {
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof path, "%s/file", dir);
    int at = open(dir, O_RDONLY | O_DIRECTORY);
    pthread_t t;
    pthread_create(&t, NULL, churn, NULL);
    while (!started)
        ;
    long seen = 0, linked = 0, reachable = 0, relative = 0;
    struct stat st;
    for (int i = 0; i < ROUNDS; i++) {
        if (stat(path, &st) == 0)
            seen++;
        if (lstat(path, &st) == 0)
            linked++;
        if (access(path, F_OK) == 0)
            reachable++;
        if (fstatat(at, "file", &st, 0) == 0 || faccessat(at, "file", R_OK, 0) == 0)
            relative++;
    }
    pthread_join(t, NULL);
    close(at);
    rmdir(dir);
    printf("seen %ld linked %ld reachable %ld relative %ld\n", seen, linked, reachable, relative);
    return 0;
}
