/* Temporary files and directories from threads: the names mkstemp,
 * mkostemp, mkstemp64 (mkstemp with _FILE_OFFSET_BITS=64), mkstemps (X's
 * before a suffix) and mkdtemp draw, and the names tmpnam, tmpnam_r and
 * tempnam make up, differ in every run (glibc draws them inside libc);
 * replay must give the recorded ones, and the files must work. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char names[2][64];
static char made_up[2][64];

static void *worker(void *arg) {
    long id = (long)arg;
    char path[] = "/tmp/rr-lite-test-file-XXXXXX";
    int fd = id ? mkostemp(path, O_CLOEXEC) : mkstemp(path);
    char text[32], back[32] = {0};
    int n = snprintf(text, sizeof text, "thread %ld", id);
    if (fd < 0 || write(fd, text, n) != n || pread(fd, back, n, 0) != n) {
        perror("temp file");
        exit(1);
    }
    snprintf(names[id], sizeof names[id], "%s %s", path, back);
    close(fd);
    unlink(path);
    char *other = tempnam(NULL, id ? "rrb" : "rra");
    snprintf(made_up[id], sizeof made_up[id], "%s", other ? other : "(none)");
    free(other);
    return NULL;
}

int main(void) {
    char dir[] = "/tmp/rr-lite-test-dir-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char large[] = "/tmp/rr-lite-test-file64-XXXXXX";
    int fd = mkstemp64(large);
    if (fd < 0) {
        perror("mkstemp64");
        return 1;
    }
    close(fd);
    unlink(large);
    char suffixed[] = "/tmp/rr-lite-test-file-XXXXXX.txt";
    fd = mkstemps(suffixed, 4);
    if (fd < 0) {
        perror("mkstemps");
        return 1;
    }
    close(fd);
    unlink(suffixed);
    char first[L_tmpnam], second[L_tmpnam];
    snprintf(first, sizeof first, "%s", tmpnam(NULL));
    if (!tmpnam(second) || !tmpnam_r(second)) {
        perror("tmpnam");
        return 1;
    }
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("dir %s\nfile64 %s\nsuffixed %s\n%s\n%s\n", dir, large, suffixed, names[0], names[1]);
    printf("tmpnam %s %s\ntempnam %s %s\n", first, second, made_up[0], made_up[1]);
    rmdir(dir);
    return 0;
}
