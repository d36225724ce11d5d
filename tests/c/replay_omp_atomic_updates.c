/* OpenMP atomic updates that are not one fetch-and-op: gcc expands them
 * into a compare-and-swap loop (`+=` on a double or a float, `*=` on any
 * type, a capture) after its thread sanitizer has run, so rr-lite compiles
 * them into calls it records (`-fno-inline-atomics`). A floating-point
 * result depends on the order of the updates: recordings print other
 * digits, and each replay must print its recording's. */
#include <stdio.h>

static double sum, chain;
static float product = 1.0f;
static unsigned char bytes = 1;

int main(void) {
    #pragma omp parallel num_threads(4)
    {
        #pragma omp for schedule(dynamic, 8)
        for (int i = 0; i < 4000; i++) {
            double v = (i % 7 == 0 ? 1e10 : 1.0) / (i + 1.0);
            #pragma omp atomic
            sum += v;
            #pragma omp atomic
            product *= 1.0f + (float)(i % 5) * 1e-4f;
            #pragma omp atomic
            bytes *= 3;
            double before;
            #pragma omp atomic capture
            {
                before = chain;
                chain = chain * 0.5 + v;
            }
            (void)before;
        }
    }
    printf("%.17g %.9g %u %.17g\n", sum, (double)product, bytes, chain);
    return 0;
}
