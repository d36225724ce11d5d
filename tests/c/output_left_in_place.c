/* Writes an output file only if it is not there yet (as zstd -o does): a
 * replay started with the recording's output still in place takes the other
 * branch and diverges, and says which file the recording created.
 * usage: output_left_in_place PATH */
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>

static int counter;

static void *work(void *arg) {
    for (int i = 0; i < 1000; i++) counter++;
    return arg;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    pthread_t t;
    pthread_create(&t, 0, work, 0);
    struct stat st;
    if (stat(argv[1], &st) == 0) {
        fprintf(stderr, "%s exists: not overwriting it\n", argv[1]);
        pthread_join(t, 0);
        return 1;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f) return 3;
    fputs("the output\n", f);
    fclose(f);
    pthread_join(t, 0);
    printf("wrote the output\n");
    return 0;
}
