/* OpenMP constructs before the first parallel region, run by the initial
 * thread alone: an orphaned barrier and an orphaned loop (NPB SP's
 * `initialize` has one). With clang, libomp made its parallel
 * initialisation inside the first of them, which the runtime reaches
 * through frames of other sizes in record and replay: the stack addresses
 * libomp logged there moved, and every replay diverged. Then a region whose
 * critical sections record the threads' order. */
#include <omp.h>
#include <stdio.h>

static int order[64];
static int next;
static long sum;

int main(void) {
    #pragma omp barrier
    #pragma omp for reduction(+: sum)
    for (int i = 0; i < 100; i++) sum += i;
    #pragma omp parallel num_threads(4)
    {
        for (int k = 0; k < 8; k++) {
            #pragma omp critical
            order[next++] = omp_get_thread_num();
        }
    }
    printf("%ld", sum);
    for (int i = 0; i < next; i++) printf(" %d", order[i]);
    printf("\n");
    return 0;
}
