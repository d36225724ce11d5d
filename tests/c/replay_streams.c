/* Streams from outside, read through stdio (which reads inside libc, out
 * of the interposer's sight): two threads fread /dev/urandom through
 * fopen; main reads a command's random output from popen with
 * getc_unlocked and reports pclose's status (the command's exit code is
 * random too); a third thread scans part of a long popen output and
 * closes it early (the command may or may not have been stopped by
 * SIGPIPE: its status differs from run to run); system() returns a random
 * status; fileno works on a popen stream. Replay must print the same. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *random_reader(void *arg) {
    (void)arg;
    FILE *f = fopen("/dev/urandom", "rb");
    unsigned char bytes[8];
    if (f == NULL || fread(bytes, 1, sizeof bytes, f) != sizeof bytes) return NULL;
    fclose(f);
    flockfile(stdout);
    printf("urandom:");
    for (unsigned i = 0; i < sizeof bytes; i++) printf(" %02x", bytes[i]);
    printf("\n");
    funlockfile(stdout);
    return NULL;
}

static void *scanner(void *arg) {
    (void)arg;
    FILE *p = popen("seq 1 200000", "r");
    if (p == NULL) return NULL;
    long v, sum = 0;
    int n = 0;
    while (n < 3000 && fscanf(p, "%ld", &v) == 1) {
        sum += v;
        n++;
    }
    int has_fd = fileno(p) > 2;
    int status = pclose(p);
    printf("scanned %d sum %ld fileno %d status %d\n", n, sum, has_fd, status);
    return NULL;
}

int main(void) {
    pthread_t threads[3];
    pthread_create(&threads[0], NULL, random_reader, NULL);
    pthread_create(&threads[1], NULL, random_reader, NULL);
    pthread_create(&threads[2], NULL, scanner, NULL);
    FILE *p = popen("od -An -N6 -tx1 /dev/urandom; exit $(( $(od -An -N1 -tu1 /dev/urandom) % 5 ))", "r");
    if (p == NULL) return 1;
    char line[128];
    int c, k = 0;
    while ((c = getc_unlocked(p)) != EOF && k < 127) line[k++] = (char)c;
    line[k] = 0;
    int status = pclose(p);
    printf("od:%s", line);
    printf("od status %d\n", status);
    printf("system %d\n", system("exit $(( $(od -An -N1 -tu1 /dev/urandom) % 3 ))"));
    for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
    return 0;
}
