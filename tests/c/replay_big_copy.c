/* Threads hand buffers of hundreds of megabytes to each other with memset
 * and memcpy (each call one range event of tens of millions of granules),
 * two of them copying the same buffer, and read and write single words
 * inside them in between, racing with a copy. The output depends on which
 * thread's write the copies saw.
 * usage: replay_big_copy [MEGABYTES=128] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *a, *b, *c;
static size_t n;
static volatile int go;

static void *copier(void *arg) {
    (void)arg;
    while (!go) {
    }
    memcpy(b, a, n);
    b[n / 2] ^= 0x5a; /* one word of a copied buffer */
    return NULL;
}

static void *poker(void *arg) {
    (void)arg;
    while (!go) {
    }
    memcpy(c, a, n / 2); /* a second reader of the first half */
    for (size_t i = 0; i < n; i += n / 64)
        a[i] += 1; /* races with the copy */
    return NULL;
}

int main(int argc, char **argv) {
    n = (size_t)(argc > 1 ? atol(argv[1]) : 128) << 20;
    a = malloc(n);
    b = malloc(n);
    c = malloc(n / 2);
    if (!a || !b || !c) return 4;
    memset(a, 7, n);
    pthread_t t[2];
    pthread_create(&t[0], NULL, copier, NULL);
    pthread_create(&t[1], NULL, poker, NULL);
    go = 1;
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    memcpy(a + 8, b, n - 8);
    unsigned long sum = 0;
    for (size_t i = 0; i < n; i += 4096) sum = sum * 31 + a[i] + b[i];
    for (size_t i = 0; i < n / 2; i += 4096) sum = sum * 31 + c[i];
    printf("sum %lu\n", sum);
    free(a);
    free(b);
    free(c);
    return 0;
}
