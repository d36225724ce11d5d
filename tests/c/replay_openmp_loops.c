/* OpenMP loops whose chunk hand-out is decided at run time (gcc's libgomp):
 * `ordered` loops with dynamic, guided and run-time schedules, loops over
 * unsigned long long variables, doacross loops (ordered(N) with
 * depend(sink)/depend(source)) of every schedule, one of seven dimensions
 * (a wait passes some iteration numbers on the stack), sections and a
 * cancelled loop. Which thread ran which iteration depends on the
 * interleaving; the ordered regions and doacross sinks fix the order of the
 * work they guard. libgomp frees a construct's allocated state in the
 * thread that ends the next one last. */
#include <omp.h>
#include <stdio.h>

#ifndef THREADS
#define THREADS 4
#endif
#define N 120

static int owner[6][N];
static int seq[6][N];
static int seq_n[6];
static long chain[N];
static long grid[12][12];
static volatile long racy;
static int cancelled_at = -1;
static int section_owner[3];
static long wide[4][4][4][4][4][4][4];
static unsigned long long big_n = N;

static unsigned long mix(unsigned long h, long v) { return h * 1000003UL ^ (unsigned long)v; }

static long spin(int i) {
    long w = 0;
    for (int k = 0; k < (i % 5) * 40; k++) w += k;
    return w & 0;
}

int main(void) {
    omp_set_dynamic(0);
    #pragma omp parallel num_threads(THREADS)
    {
        int me = omp_get_thread_num();
        #pragma omp for ordered schedule(dynamic, 3)
        for (int i = 0; i < N; i++) {
            owner[0][i] = me + (int)spin(i);
            racy += me;
            #pragma omp ordered
            seq[0][seq_n[0]++] = me;
        }
        #pragma omp for ordered schedule(guided)
        for (int i = 0; i < N; i++) {
            owner[1][i] = me + (int)spin(i);
            #pragma omp ordered
            seq[1][seq_n[1]++] = me;
        }
        #pragma omp for ordered schedule(runtime)
        for (int i = 0; i < N; i++) {
            owner[2][i] = me + (int)spin(i);
            #pragma omp ordered
            seq[2][seq_n[2]++] = me;
        }
        #pragma omp for schedule(dynamic, 2)
        for (unsigned long long i = 0; i < big_n; i++) owner[3][i] = me + (int)spin((int)i);
        #pragma omp for ordered schedule(dynamic) nowait
        for (unsigned long long i = 0; i < big_n; i++) {
            owner[4][i] = me + (int)spin((int)i);
            #pragma omp ordered
            seq[4][seq_n[4]++] = me;
        }
        #pragma omp barrier
        #pragma omp for ordered(1) schedule(dynamic, 2)
        for (int i = 1; i < N; i++) {
            #pragma omp ordered depend(sink: i - 1)
            chain[i] = chain[i - 1] * 3 + me;
            #pragma omp ordered depend(source)
            owner[5][i] = me + (int)spin(i);
        }
        #pragma omp for ordered(2) schedule(dynamic)
        for (int i = 1; i < 12; i++)
            for (int j = 1; j < 12; j++) {
                #pragma omp ordered depend(sink: i - 1, j) depend(sink: i, j - 1)
                grid[i][j] = grid[i - 1][j] + grid[i][j - 1] + me;
                #pragma omp ordered depend(source)
            }
        #pragma omp for ordered(1) schedule(guided)
        for (int i = 1; i < N; i++) {
            #pragma omp ordered depend(sink: i - 1)
            chain[i] += chain[i - 1] + me;
            #pragma omp ordered depend(source)
        }
        #pragma omp for ordered(1) schedule(static, 3)
        for (int i = 1; i < N; i++) {
            #pragma omp ordered depend(sink: i - 1)
            chain[i] ^= chain[i - 1] + me;
            #pragma omp ordered depend(source)
        }
        /* Seven dimensions: a doacross wait passes some on the stack. */
        #pragma omp for ordered(7) schedule(dynamic)
        for (int a = 1; a < 4; a++)
          for (int b = 0; b < 4; b++)
            for (int c = 0; c < 2; c++)
              for (int d = 0; d < 2; d++)
                for (int e = 0; e < 2; e++)
                  for (int f = 0; f < 2; f++)
                    for (int g = 0; g < 2; g++) {
                        #pragma omp ordered depend(sink: a - 1, b, c, d, e, f, g)
                        wide[a][b][c][d][e][f][g] = wide[a - 1][b][c][d][e][f][g] * 5 + me;
                        #pragma omp ordered depend(source)
                    }
        #pragma omp sections
        {
            #pragma omp section
            section_owner[0] = me + 1;
            #pragma omp section
            section_owner[1] = me + 1;
            #pragma omp section
            section_owner[2] = me + 1;
        }
        #pragma omp for schedule(dynamic)
        for (int i = 0; i < N; i++) {
            if (i == N / 2) {
                cancelled_at = me;
                #pragma omp cancel for
            }
            #pragma omp cancellation point for
            owner[0][i] += me;
        }
    }
    for (int i = 0; i < 4; i++)
        for (int b = 0; b < 4; b++) chain[i] = chain[i] * 7 + wide[3][b][1][1][0][1][0];
    printf("sections %d %d %d cancel %d\n", section_owner[0], section_owner[1], section_owner[2],
           cancelled_at);
    unsigned long h[6] = {0};
    for (int l = 0; l < 6; l++)
        for (int i = 0; i < N; i++) h[l] = mix(mix(h[l], owner[l][i]), seq[l][i]);
    unsigned long c = 0;
    for (int i = 0; i < N; i++) c = mix(c, chain[i]);
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 12; j++) c = mix(c, grid[i][j]);
    printf("dynamic %lx guided %lx runtime %lx ull %lx ull-ordered %lx doacross %lx %lx racy %ld\n",
           h[0], h[1], h[2], h[3], h[4], h[5], c, racy);
    return 0;
}
