/* Descriptor numbers: two threads each open files in a directory given as
 * argv[1] (open, fopen, tmpfile or mkstemp by turns), and in each round
 * also open that directory with opendir; they write a line naming both
 * descriptors into each file, read every file back and print it. Which
 * thread gets which number is decided by the interleaving; the runtime's
 * own files must not shift them, and calls that open descriptors inside
 * libc (opendir, tmpfile, mkstemp) are ordered like open. The main thread
 * makes a pipe, a duplicate and a socket first, and prints those numbers
 * too. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define THREADS 2
#define ROUNDS 4

static const char *dir;
static pthread_barrier_t start;

/* Opens round `round`'s file of thread `me`, a different way each round. */
static int open_file(long me, int round, FILE **stream) {
    char path[4096];
    snprintf(path, sizeof path, "%s/file-%ld-%d", dir, me, round);
    *stream = NULL;
    switch (round % 4) {
    case 0:
        return open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    case 1:
        *stream = fopen(path, "w+");
        break;
    case 2:
        *stream = tmpfile();
        break;
    default: {
        snprintf(path, sizeof path, "%s/temp-%ld-%d-XXXXXX", dir, me, round);
        int fd = mkstemp(path);
        if (fd >= 0) unlink(path);
        return fd;
    }
    }
    return *stream ? fileno(*stream) : -1;
}

static void *worker(void *arg) {
    long me = (long)arg;
    int fds[ROUNDS];
    FILE *streams[ROUNDS];
    pthread_barrier_wait(&start);
    for (int i = 0; i < ROUNDS; i++) {
        fds[i] = open_file(me, i, &streams[i]);
        if (fds[i] < 0) {
            perror("open");
            exit(2);
        }
        DIR *listing = opendir(dir);
        if (!listing) {
            perror("opendir");
            exit(2);
        }
        char line[64];
        int n = snprintf(line, sizeof line, "thread %ld round %d fd %d dir %d\n", me, i, fds[i],
                         dirfd(listing));
        closedir(listing);
        if (write(fds[i], line, n) != n) exit(3);
    }
    for (int i = 0; i < ROUNDS; i++) {
        char back[64];
        ssize_t n = pread(fds[i], back, sizeof back - 1, 0);
        back[n > 0 ? n : 0] = 0;
        printf("%s", back);
        if (streams[i]) fclose(streams[i]);
        else close(fds[i]);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return 1;
    dir = argv[1];
    int p[2];
    if (pipe(p) != 0) return 4;
    int copy = dup(p[0]);
    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    printf("pipe %d %d, dup %d, socket %d\n", p[0], p[1], copy, sock);
    close(copy);
    pthread_barrier_init(&start, NULL, THREADS);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    int last = open(argv[1], O_RDONLY | O_DIRECTORY);
    printf("last %d\n", last);
    for (long i = 0; i < THREADS; i++)
        for (int r = 0; r < ROUNDS; r++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/file-%ld-%d", dir, i, r);
            unlink(path);
        }
    return 0;
}
