// A recursive fork-join: each call starts a thread for the lower half of
// its range and recurses on the upper half itself, then joins (the shape of
// a parallel quicksort with std::async). Threads are created by many
// threads at once and joined as soon as they end, so glibc hands the
// descriptor of a joined thread to the next one created, while other
// creators wait their turn: a thread with a lower logical id was created
// later and got the descriptor of one with a higher id. The runtime then
// took the join for the gone thread's and, holding the stack cache's
// stripe, waited in the real join for a thread that needed that stripe to
// end: record hung (three recordings of three).
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct range { long lo, hi, sum; };

static void *sum_range(void *arg) {
    struct range *r = arg;
    if (r->hi - r->lo <= 2) {
        r->sum = 0;
        for (long i = r->lo; i < r->hi; i++) r->sum += i * i;
        return NULL;
    }
    long mid = (r->lo + r->hi) / 2;
    struct range lower = {r->lo, mid, 0}, upper = {mid, r->hi, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, sum_range, &lower) != 0) {
        perror("pthread_create");
        exit(1);
    }
    sum_range(&upper);
    pthread_join(t, NULL);
    r->sum = lower.sum + upper.sum;
    return NULL;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 200;
    struct range all = {0, n, 0};
    sum_range(&all);
    printf("sum of squares below %ld: %ld\n", n, all.sum);
    return 0;
}
