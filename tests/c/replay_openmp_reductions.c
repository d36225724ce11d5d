/* OpenMP reductions that go through libgomp's task-reduction machinery:
 * `parallel reduction(task, ...)` (GOMP_parallel_reductions, whose region
 * argument starts with the reductions' descriptor), a task `in_reduction`,
 * `sections` and `scope` reductions, a `taskgroup task_reduction` and a
 * loop `reduction(task, ...)`. Which thread contributed what depends on
 * the interleaving. */
#include <omp.h>
#include <stdio.h>
static long x, y, z, w, v;
int main(void) {
    #pragma omp parallel num_threads(4) reduction(task, +: x)
    {
        #pragma omp single
        {
            #pragma omp task in_reduction(+: x)
            x += omp_get_thread_num() + 1;
        }
        #pragma omp sections reduction(+: y)
        {
            #pragma omp section
            y += 1 + omp_get_thread_num();
            #pragma omp section
            y += 10 * (1 + omp_get_thread_num());
        }
#if !defined(__clang__) || __clang_major__ >= 16 /* `scope`: OpenMP 5.1 */
        #pragma omp scope reduction(+: z)
        z += omp_get_thread_num();
#else
        #pragma omp atomic
        z += omp_get_thread_num();
#endif
        #pragma omp taskgroup task_reduction(+: w)
        {
            #pragma omp single
            {
                #pragma omp task in_reduction(+: w)
                w += omp_get_thread_num() + 5;
            }
        }
        #pragma omp for reduction(task, +: v) schedule(dynamic)
        for (int i = 0; i < 20; i++) v += i * (1 + omp_get_thread_num());
    }
    printf("%ld %ld %ld %ld %ld\n", x, y, z, w, v);
    return 0;
}
