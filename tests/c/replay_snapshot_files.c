/* Two threads read the file named by argv[1], one with open/read, one with
 * fopen/fgets, and print what they read; then main rewrites a second file
 * it created and reads it back. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *path;
static long sums[2];

static void *by_read(void *arg) {
    (void)arg;
    char buf[256];
    int fd = open(path, O_RDONLY);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf);
    for (ssize_t i = 0; i < n; i++) sums[0] += buf[i];
    if (fd >= 0) close(fd);
    return NULL;
}

static void *by_stdio(void *arg) {
    (void)arg;
    char line[256];
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        for (size_t i = 0; line[i]; i++) sums[1] += line[i] * 3;
    if (f) fclose(f);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    path = argv[1];
    pthread_t a, b;
    pthread_create(&a, NULL, by_read, NULL);
    pthread_create(&b, NULL, by_stdio, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    FILE *out = fopen(argv[2], "w");
    fprintf(out, "written %ld\n", sums[0]);
    fclose(out);
    char back[64] = {0};
    FILE *in = fopen(argv[2], "r");
    if (!in || !fgets(back, sizeof back, in)) return 3;
    fclose(in);
    printf("read %ld stdio %ld back %s", sums[0], sums[1], back);
    return 0;
}
