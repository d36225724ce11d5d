/* Directory walks and descriptor numbers: one thread walks a tree under
 * argv[1] with nftw, ftw and scandir (with a filter that opens a file),
 * whose directory descriptors glibc opens and closes inside libc between
 * calls of the program's functions, while another
 * thread opens and closes a file again and again and prints the numbers it
 * got: they depend on how deep the walk was at that moment. The walker's
 * function also opens each file it is given, and prints its number. Replay
 * must print the same numbers. The tree is made first (main thread). */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *root;
static volatile int walking = 1;
static char walked[4096];
static size_t walked_len;

static void make_tree(const char *dir, int depth) {
    mkdir(dir, 0700);
    if (depth == 0) return;
    for (int i = 0; i < 3; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/d%d", dir, i);
        make_tree(path, depth - 1);
        snprintf(path, sizeof path, "%s/f%d", dir, i);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) close(fd);
    }
}

static void note(int fd) {
    if (walked_len + 8 < sizeof walked)
        walked_len += (size_t)snprintf(walked + walked_len, sizeof walked - walked_len, " %d", fd);
}

static int visit(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)ftw;
    if (flag == FTW_F) {
        int fd = open(path, O_RDONLY);
        note(fd);
        if (fd >= 0) close(fd);
    }
    return 0;
}

static int visit_old(const char *path, const struct stat *sb, int flag) {
    return visit(path, sb, flag, NULL);
}

static int keep(const struct dirent *entry) {
    int fd = open(root, O_RDONLY);
    note(fd);
    if (fd >= 0) close(fd);
    return entry->d_name[0] != '.';
}

static void *walker(void *arg) {
    (void)arg;
    for (int i = 0; i < 4; i++) {
        nftw(root, visit, 3, FTW_PHYS);
        ftw(root, visit_old, 2);
        struct dirent **list;
        int n = scandir(root, &list, keep, alphasort);
        for (int k = 0; k < n; k++) free(list[k]);
        if (n >= 0) free(list);
        note(n);
    }
    walking = 0;
    return NULL;
}

static void *opener(void *arg) {
    (void)arg;
    char path[4096];
    snprintf(path, sizeof path, "%s/f0", root);
    unsigned long h = 0;
    int n = 0;
    while (walking && n < 2000) {
        int fd = open(path, O_RDONLY);
        h = h * 31 + (unsigned long)fd;
        n++;
        if (fd >= 0) close(fd);
    }
    printf("opener %d opens, numbers hash %lx\n", n > 0, h);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    root = argv[1];
    char top[4096];
    snprintf(top, sizeof top, "%s", root);
    make_tree(top, 3);
    pthread_t w, o;
    pthread_create(&o, NULL, opener, NULL);
    pthread_create(&w, NULL, walker, NULL);
    pthread_join(w, NULL);
    pthread_join(o, NULL);
    unsigned long h = 0;
    for (size_t i = 0; i < walked_len; i++) h = h * 131 + (unsigned char)walked[i];
    printf("walked %zu bytes of numbers, hash %lx\n", walked_len, h);
    return 0;
}
