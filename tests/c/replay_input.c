/* Input that differs from run to run: bytes from /dev/urandom (read, and
 * readv into two buffers) and getrandom(), printed; a pipe between two
 * threads, whose reader prints how many bytes each read returned (decided
 * by how far the writer had got); and the same over a socket pair read
 * with recvmsg into two buffers. Replay must print the same bytes and the
 * same counts. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static int pipe_fds[2];
static int sock_fds[2];

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

static void *sock_writer(void *arg) {
    (void)arg;
    char chunk[40];
    for (int i = 0; i < 30; i++) {
        memset(chunk, 'A' + i % 26, sizeof chunk);
        if (send(sock_fds[1], chunk, (size_t)(i % 4 + 1) * 9, 0) < 0) return NULL;
    }
    shutdown(sock_fds[1], SHUT_WR);
    return NULL;
}

static void *sock_reader(void *arg) {
    (void)arg;
    char a[16], b[48];
    long total = 0, sum = 0;
    ssize_t n;
    printf("recvmsg:");
    for (;;) {
        struct iovec iov[2] = {{a, sizeof a}, {b, sizeof b}};
        struct msghdr msg = {0};
        msg.msg_iov = iov;
        msg.msg_iovlen = 2;
        n = recvmsg(sock_fds[0], &msg, 0);
        if (n <= 0) break;
        printf(" %zd", n);
        total += n;
        for (ssize_t i = 0; i < n; i++) sum += i < (ssize_t)sizeof a ? a[i] : b[i - sizeof a];
    }
    printf("\ntotal %ld sum %ld\n", total, sum);
    return NULL;
}

int main(void) {
    unsigned char bytes[16];
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd < 0 || read(fd, bytes, sizeof bytes) != (ssize_t)sizeof bytes) return 2;
    unsigned char head[3], tail[5];
    struct iovec iov[2] = {{head, sizeof head}, {tail, sizeof tail}};
    if (readv(fd, iov, 2) != 8) return 5;
    close(fd);
    printf("urandom");
    for (unsigned i = 0; i < sizeof bytes; i++) printf(" %02x", bytes[i]);
    printf("\nreadv");
    for (unsigned i = 0; i < sizeof head; i++) printf(" %02x", head[i]);
    for (unsigned i = 0; i < sizeof tail; i++) printf(" %02x", tail[i]);
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
    fflush(stdout);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sock_fds) != 0) return 6;
    pthread_create(&r, NULL, sock_reader, NULL);
    pthread_create(&w, NULL, sock_writer, NULL);
    pthread_join(w, NULL);
    pthread_join(r, NULL);
    close(sock_fds[0]);
    close(sock_fds[1]);
    return 0;
}
