/* Input from a FIFO whose writer is another process (the test): main reads
 * it line by line through stdio, a thread with read(2) from a second FIFO,
 * and both print what they got. At replay the writer is gone: the opens
 * must not wait for it and the bytes must come from the trace. The opens
 * come one after the other: two blocking opens at once are ordered by when
 * they returned (README, limits). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static const char *second;

static void *raw_reader(void *arg) {
    (void)arg;
    int fd = open(second, O_RDONLY);
    if (fd < 0) return NULL;
    char buf[256];
    long total = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) total += n;
    close(fd);
    printf("raw reader: %ld bytes\n", total);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    second = argv[2];
    FILE *f = fopen(argv[1], "r");
    if (f == NULL) return 1;
    pthread_t t;
    pthread_create(&t, NULL, raw_reader, NULL);
    char line[256];
    int lines = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        lines++;
        printf("line: %s", line);
    }
    pthread_join(t, NULL);
    fclose(f);
    printf("%d lines\n", lines);
    return 0;
}
