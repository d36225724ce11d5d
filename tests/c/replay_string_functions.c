/* Threads copying, comparing and measuring memory another thread writes
 * through the C library's functions: gcc expands a constant-size memcpy,
 * memset or memcmp inline (no hook sees it), and libc's strlen, strcmp,
 * strcpy... read and write inside libc. A reader copies a 48-byte header
 * the writer keeps in two copies (SQLite's WAL index header) and compares
 * them, and measures, compares and duplicates a string the writer rewrites; what it
 * saw depends on the interleaving, and each replay must print its
 * recording's. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 40000

typedef struct { unsigned a[12]; } Header;   /* 48 bytes */
static Header shared_header[2];
static char shared_text[32];
static volatile int done;

static void *writer(void *arg) {
    (void)arg;
    Header h;
    memset(&h, 0, sizeof h);
    for (unsigned i = 1; i <= ROUNDS; i++) {
        h.a[0] = i;
        h.a[11] = i;
        memcpy(&shared_header[1], &h, sizeof h);
        __sync_synchronize();
        memcpy(&shared_header[0], &h, sizeof h);
        strcpy(shared_text, i % 2 ? "odd round" : "an even round");
    }
    done = 1;
    return NULL;
}

int main(void) {
    pthread_t t;
    strcpy(shared_text, "start");
    pthread_create(&t, NULL, writer, NULL);
    unsigned long sum = 0, torn = 0, odd = 0, even = 0, longer = 0, reads = 0;
    while (!done && reads < 4 * ROUNDS) {
        Header h1, h2;
        memcpy(&h1, &shared_header[0], sizeof h1);
        __sync_synchronize();
        memcpy(&h2, &shared_header[1], sizeof h2);
        if (memcmp(&h1, &h2, sizeof h1) != 0)
            torn++;
        else
            sum += h1.a[0];
        char text[32];
        strcpy(text, shared_text);
        if (strcmp(text, "odd round") == 0)
            odd++;
        if (strlen(shared_text) > 9)
            longer++;
        char *copy = strdup(shared_text);
        if (copy && copy[0] == 'a')
            even++;
        free(copy);
        reads++;
    }
    pthread_join(t, NULL);
    printf("reads %lu sum %lu torn %lu odd %lu even %lu longer %lu\n", reads, sum, torn, odd, even,
           longer);
    return 0;
}
