/* Input that differs from run to run: bytes from /dev/urandom (read) and
 * getrandom(), printed; and a pipe between two threads, whose reader
 * prints how many bytes each read returned (decided by how far the writer
 * had got). Replay must print the same bytes and the same counts. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

static int pipe_fds[2];

static void *writer(void *arg) {
    (void)arg;
    char chunk[37];
    for (int i = 0; i < 40; i++) {
        for (unsigned j = 0; j < sizeof chunk; j++) chunk[j] = (char)('a' + (i + j) % 26);
        if (write(pipe_fds[1], chunk, (size_t)(i % 5 + 1) * 7) < 0) return NULL;
    }
    close(pipe_fds[1]);
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    char buf[64];
    long total = 0, sum = 0;
    ssize_t n;
    printf("reads:");
    while ((n = read(pipe_fds[0], buf, sizeof buf)) > 0) {
        printf(" %zd", n);
        total += n;
        for (ssize_t i = 0; i < n; i++) sum += buf[i];
    }
    printf("\ntotal %ld sum %ld\n", total, sum);
    return NULL;
}

int main(void) {
    unsigned char bytes[16];
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd < 0 || read(fd, bytes, sizeof bytes) != (ssize_t)sizeof bytes) return 2;
    close(fd);
    printf("urandom");
    for (unsigned i = 0; i < sizeof bytes; i++) printf(" %02x", bytes[i]);
    if (getrandom(bytes, 8, 0) != 8) return 3;
    printf("\ngetrandom");
    for (unsigned i = 0; i < 8; i++) printf(" %02x", bytes[i]);
    printf("\n");
    fflush(stdout);
    if (pipe(pipe_fds) != 0) return 4;
    pthread_t w, r;
    pthread_create(&r, NULL, reader, NULL);
    pthread_create(&w, NULL, writer, NULL);
    pthread_join(w, NULL);
    pthread_join(r, NULL);
    close(pipe_fds[0]);
    return 0;
}
