/* OpenMP constructs whose outcome depends on the interleaving: a reduction
 * done by hand without synchronisation (lost updates), the order in which
 * threads enter a critical section, which thread gets which chunk of dynamic
 * and guided loops, which thread wins a single, the order of omp_set_lock
 * holders, atomic updates, barriers, master, tasks (tied and untied) with taskwait, a taskloop
 * (which thread ran which chunk), teams (how many teams there were) and
 * single copyprivate (whose value every thread got), and an ordered loop.
 * It prints how long it took by omp_get_wtime, which replay must give back. */
#include <omp.h>
#include <stdio.h>

#define THREADS 4
#define N 400

static int chunk_owner[N];
static int critical_order[64];
static int critical_n;
static volatile long racy_sum;
static int lock_order[64];
static int lock_n;
static int single_winner = -1;
static long atomic_count;
static long task_sum;
static int taskloop_owner[N];
static volatile int teams_seen;
static int copied[THREADS];
static int ordered_owner[N];
static int ordered_n;

static unsigned long mix(unsigned long h, long v) { return h * 1000003UL ^ (unsigned long)v; }

int main(void) {
    long sum_static = 0, sum_guided = 0;
    double started = omp_get_wtime();
    omp_lock_t lock;
    omp_init_lock(&lock);
    omp_set_dynamic(0);
    #pragma omp parallel num_threads(THREADS)
    {
        int me = omp_get_thread_num();
        #pragma omp for schedule(dynamic, 7)
        for (int i = 0; i < N; i++) chunk_owner[i] = me;

        #pragma omp for schedule(static) reduction(+:sum_static)
        for (int i = 0; i < N; i++) sum_static += i;

        #pragma omp for schedule(guided) reduction(+:sum_guided) nowait
        for (int i = 0; i < N; i++) sum_guided += i * 2;

        for (int i = 0; i < 50; i++) racy_sum += me + 1; /* racy on purpose */

        #pragma omp critical
        critical_order[critical_n++] = me;

        #pragma omp barrier

        #pragma omp single
        single_winner = me;

        for (int i = 0; i < 3; i++) {
            omp_set_lock(&lock);
            lock_order[lock_n++] = me;
            omp_unset_lock(&lock);
        }

        #pragma omp atomic
        atomic_count += me;

        #pragma omp master
        {
            for (int t = 1; t <= 10; t++) {
                #pragma omp task firstprivate(t)
                {
                    #pragma omp atomic
                    task_sum += t;
                }
                /* Untied, with a scheduling point inside. */
                #pragma omp task untied firstprivate(t)
                {
                    #pragma omp taskyield
                    #pragma omp atomic
                    task_sum += 100 * t;
                }
            }
            #pragma omp taskwait
        }
    }
    #pragma omp parallel num_threads(THREADS)
    #pragma omp single
    #pragma omp taskloop grainsize(16)
    for (int i = 0; i < N; i++) taskloop_owner[i] = omp_get_thread_num() + 1;

    #pragma omp parallel num_threads(THREADS)
    {
        int mine = -1;
        #pragma omp single copyprivate(mine)
        mine = omp_get_thread_num() + 100;
        copied[omp_get_thread_num()] = mine;
    }

    #pragma omp parallel for ordered schedule(static) num_threads(THREADS)
    for (int i = 0; i < 40; i++) {
        long work = 0;
        for (int k = 0; k < (i % 7) * 50; k++) work += k;
        #pragma omp ordered
        ordered_owner[ordered_n++] = omp_get_thread_num() + (int)(work & 0);
    }

    #pragma omp teams num_teams(2)
    teams_seen += omp_get_num_teams() * 10 + omp_get_team_num();

    omp_destroy_lock(&lock);
    unsigned long owners = 0, crit = 0, locks = 0;
    for (int i = 0; i < N; i++) owners = mix(owners, chunk_owner[i]);
    for (int i = 0; i < critical_n; i++) crit = mix(crit, critical_order[i]);
    for (int i = 0; i < lock_n; i++) locks = mix(locks, lock_order[i]);
    unsigned long ordered = 0;
    for (int i = 0; i < ordered_n; i++) ordered = mix(ordered, ordered_owner[i] + 1);
    unsigned long taskloop = 0;
    for (int i = 0; i < N; i++) taskloop = mix(taskloop, taskloop_owner[i]);
    printf("static %ld guided %ld racy %ld atomic %ld tasks %ld single %d\n",
           sum_static, sum_guided, racy_sum, atomic_count, task_sum, single_winner);
    printf("chunks %lx critical %lx locks %lx\n", owners, crit, locks);
    printf("taskloop %lx teams %d copied %d %d %d %d ordered %d %lx\n", taskloop, teams_seen,
           copied[0], copied[1], copied[2], copied[3], ordered_n, ordered);
    printf("took %.9f s\n", omp_get_wtime() - started);
    return 0;
}
