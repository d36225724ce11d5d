/* Threads copy between shared buffers with memcpy, memmove (overlapping)
 * and memset, for sizes from 1 byte to more than 64 KiB. The sizes come
 * from a volatile table so the compiler keeps the library calls. Main
 * checks every byte at the end. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 2
#define MAX 200000

static volatile size_t sizes[] = {1, 3, 8, 100, 4096, 65536 + 17, 200000};
#define NSIZES (sizeof sizes / sizeof sizes[0])
static unsigned char src[MAX];
static unsigned char dst[THREADS][MAX + 64];

static void *worker(void *arg) {
    long id = (long)arg;
    unsigned char *d = dst[id];
    for (size_t k = 0; k < NSIZES; k++) {
        size_t n = sizes[k];
        memset(d, 0xAA, n + 16);
        memcpy(d, src, n);
        memmove(d + 8, d, n); /* overlapping, forwards */
        memmove(d, d + 8, n); /* and back */
        if (memcmp(d, src, n) != 0) return (void *)1;
    }
    memset(d, (int)id + 1, MAX);
    return NULL;
}

int main(void) {
    for (int i = 0; i < MAX; i++) src[i] = (unsigned char)(i * 31 + 7);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    int bad = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad |= r != NULL;
        for (int j = 0; j < MAX; j++) bad |= dst[i][j] != i + 1;
    }
    printf("%s\n", bad ? "WRONG" : "ok");
    return bad;
}
