/* Three threads map pages (anonymous and of a file) at the same time and
 * keep some of them: the kernel hands out addresses in the order the calls
 * reach it, so which thread owns which address, printed as a hash of the
 * owners in address order, depends on the interleaving. Replay must give
 * every mapping its recorded address. */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define THREADS 3
#define PAGES 30

static char *pages[THREADS][PAGES];

static void *worker(void *arg) {
    long me = (long)arg;
    int fd = open("/proc/self/exe", O_RDONLY);
    for (int i = 0; i < PAGES; i++) {
        char *p;
        if (i % 3 == 2 && fd >= 0) {
            p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
        } else {
            p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p != MAP_FAILED) p[0] = (char)me;
        }
        if (p == MAP_FAILED) return NULL;
        if (i % 4 == 3) {
            munmap(p, 4096);
            p = NULL;
        }
        pages[me][i] = p;
    }
    if (fd >= 0) close(fd);
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    /* Owners in address order: a selection sort over the kept pages. */
    uintptr_t last = 0;
    unsigned long h = 7;
    for (;;) {
        uintptr_t best = UINTPTR_MAX;
        int owner = -1;
        for (int th = 0; th < THREADS; th++)
            for (int i = 0; i < PAGES; i++) {
                uintptr_t a = (uintptr_t)pages[th][i];
                if (a && a > last && a < best) best = a, owner = th;
            }
        if (owner < 0) break;
        h = h * 31 + (unsigned long)owner;
        last = best;
    }
    printf("owners by address %lx\n", h);
    return 0;
}
