/* C11 <threads.h>: threads started with thrd_create append their ids to a
 * shared log under an mtx_t, hand a token round with cnd_t, race on an
 * unprotected counter and return a result read back with thrd_join. The log
 * order, the lost updates and the results depend on the interleaving. */
#include <stdio.h>
#include <threads.h>

#define THREADS 4
#define ROUNDS 40

static mtx_t lock;
static cnd_t turn_changed;
static int turn;
static int order[THREADS * ROUNDS];
static int filled;
static int racy;

static int worker(void *arg) {
    int id = (int)(long)arg;
    for (int i = 0; i < ROUNDS; i++) {
        mtx_lock(&lock);
        order[filled++] = id;
        mtx_unlock(&lock);
        racy = racy + 1;
    }
    /* Token ring: wait for our turn, pass it on. */
    mtx_lock(&lock);
    while (turn != id)
        cnd_wait(&turn_changed, &lock);
    turn = (turn + 1) % THREADS;
    cnd_broadcast(&turn_changed);
    mtx_unlock(&lock);
    return id * 10 + (racy % 7);
}

int main(void) {
    thrd_t t[THREADS];
    mtx_init(&lock, mtx_plain);
    cnd_init(&turn_changed);
    for (long i = 0; i < THREADS; i++)
        if (thrd_create(&t[i], worker, (void *)i) != thrd_success) return 1;
    int sum = 0;
    for (int i = 0; i < THREADS; i++) {
        int res;
        if (thrd_join(t[i], &res) != thrd_success) return 2;
        sum += res;
    }
    unsigned long h = 5381;
    for (int i = 0; i < filled; i++) h = h * 33 + (unsigned long)order[i];
    printf("filled %d racy %d sum %d order %lx\n", filled, racy, sum, h);
    mtx_destroy(&lock);
    cnd_destroy(&turn_changed);
    return 0;
}
