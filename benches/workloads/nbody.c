/* N-body: BODIES bodies under gravity for STEPS steps, all pairs, each
 * thread computing the accelerations of its slice (reading every position),
 * a barrier, then moving its bodies, a barrier. Every body's sum runs in the
 * same order as in a serial run, so the result is bit for bit the serial
 * one, which is the check.
 * usage: nbody [BODIES=256] [THREADS=4] [STEPS=4] */
#include <math.h>

#include "common.h"

static long bodies, threads, steps;
static double *pos, *vel, *acc, *mass;
static pthread_barrier_t barrier;

static void accelerate(double *p, double *a, long lo, long hi) {
    for (long i = lo; i < hi; i++) {
        double ax = 0, ay = 0, az = 0;
        for (long j = 0; j < bodies; j++) {
            double dx = p[3 * j] - p[3 * i], dy = p[3 * j + 1] - p[3 * i + 1];
            double dz = p[3 * j + 2] - p[3 * i + 2];
            double r2 = dx * dx + dy * dy + dz * dz + 0.01;
            double f = mass[j] / (r2 * sqrt(r2));
            ax += f * dx, ay += f * dy, az += f * dz;
        }
        a[3 * i] = ax, a[3 * i + 1] = ay, a[3 * i + 2] = az;
    }
}

static void move(double *p, double *v, const double *a, long lo, long hi) {
    for (long k = 3 * lo; k < 3 * hi; k++) {
        v[k] += 0.001 * a[k];
        p[k] += 0.001 * v[k];
    }
}

static void *worker(void *arg) {
    long id = (long)arg;
    long lo = id * bodies / threads, hi = (id + 1) * bodies / threads;
    for (long s = 0; s < steps; s++) {
        accelerate(pos, acc, lo, hi);
        pthread_barrier_wait(&barrier);
        move(pos, vel, acc, lo, hi);
        pthread_barrier_wait(&barrier);
    }
    return NULL;
}

static void start(double *p, double *v) {
    for (long i = 0; i < bodies; i++) {
        for (int c = 0; c < 3; c++) {
            p[3 * i + c] = (double)((i * 37 + c * 11) % 101) - 50.0;
            v[3 * i + c] = 0;
        }
        mass[i] = 1.0 + (double)(i % 7);
    }
}

int main(int argc, char **argv) {
    bodies = arg_or(argc, argv, 1, 256, 1, 1L << 20);
    threads = arg_or(argc, argv, 2, 4, 1, MAX_THREADS);
    steps = arg_or(argc, argv, 3, 4, 1, 1L << 20);
    size_t n3 = (size_t)bodies * 3;
    pos = malloc(n3 * sizeof *pos), vel = malloc(n3 * sizeof *vel), acc = malloc(n3 * sizeof *acc);
    mass = malloc((size_t)bodies * sizeof *mass);
    double *p = malloc(n3 * sizeof *p), *v = malloc(n3 * sizeof *v), *a = malloc(n3 * sizeof *a);
    if (!pos || !vel || !acc || !mass || !p || !v || !a) return 4;
    start(pos, vel);
    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    run_threads((int)threads, worker);
    pthread_barrier_destroy(&barrier);
    start(p, v);
    for (long s = 0; s < steps; s++) {
        accelerate(p, a, 0, bodies);
        move(p, v, a, 0, bodies);
    }
    int ok = 1;
    double e = 0;
    for (size_t k = 0; k < n3; k++) {
        ok &= p[k] == pos[k];
        e += vel[k] * vel[k];
    }
    printf("nbody bodies=%ld threads=%ld steps=%ld energy=%.9e\n", bodies, threads, steps, e);
    free(pos), free(vel), free(acc), free(mass), free(p), free(v), free(a);
    return ok ? 0 : 1;
}
