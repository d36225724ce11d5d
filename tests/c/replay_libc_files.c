/* Descriptors libc opens inside its own functions: one thread looks up the
 * user and group databases (getpwuid, getgrgid, getpwnam_r reading
 * /etc/passwd and /etc/group), counts processors (get_nprocs and sysconf
 * read /sys) and globs a directory, each opening and closing a descriptor
 * inside libc, while another thread opens and closes a file again and
 * again and hashes the numbers it got: they depend on whether a lookup was
 * in the middle of reading its file. Replay must give the same numbers. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/sysinfo.h>
#include <unistd.h>

static const char *dir;
static volatile int looking = 1;

static void *lookups(void *arg) {
    (void)arg;
    char pattern[4096];
    snprintf(pattern, sizeof pattern, "%s/*", dir);
    unsigned long found = 0;
    for (int i = 0; i < 200; i++) {
        struct passwd *pw = getpwuid(0);
        struct group *gr = getgrgid(0);
        struct passwd entry, *result = NULL;
        char buf[4096];
        getpwnam_r("root", &entry, buf, sizeof buf, &result);
        found += (pw != NULL) + (gr != NULL) + (result != NULL);
        found += get_nprocs() > 0;
        found += sysconf(_SC_NPROCESSORS_ONLN) > 0;
        glob_t g;
        if (glob(pattern, 0, NULL, &g) == 0) {
            found += g.gl_pathc;
            globfree(&g);
        }
    }
    looking = 0;
    printf("lookups found %lu\n", found);
    return NULL;
}

static void *opener(void *arg) {
    (void)arg;
    unsigned long h = 0;
    int n = 0;
    while (looking && n < 5000) {
        int fd = open(dir, O_RDONLY);
        h = h * 31 + (unsigned long)fd;
        n++;
        if (fd >= 0) close(fd);
    }
    printf("opener: numbers hash %lx\n", h);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    dir = argv[1];
    for (int i = 0; i < 3; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/f%d", dir, i);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) close(fd);
    }
    pthread_t l, o;
    pthread_create(&o, NULL, opener, NULL);
    pthread_create(&l, NULL, lookups, NULL);
    pthread_join(l, NULL);
    pthread_join(o, NULL);
    return 0;
}
