/* More descriptors libc opens inside its own functions: one thread
 * resolves "localhost" (getaddrinfo reads /etc/hosts and friends, and may
 * open a netlink socket), loads and unloads a shared library (dlopen
 * opens it), switches locales (setlocale, newlocale) and converts a time
 * to local time (the first conversion reads /etc/localtime), while another
 * thread opens and closes a file again and again and hashes the numbers
 * it got: they depend on whether a lookup was in the middle of its own
 * open. Replay must give the same numbers. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <locale.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static volatile int looking = 1;

static void *lookups(void *arg) {
    (void)arg;
    unsigned long found = 0;
    for (int i = 0; i < 100; i++) {
        struct addrinfo hints, *res = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        if (getaddrinfo("localhost", "80", &hints, &res) == 0) {
            found++;
            freeaddrinfo(res);
        }
        void *lib = dlopen("libutil.so.1", RTLD_NOW);
        if (lib != NULL) {
            found++;
            dlclose(lib);
        }
        found += setlocale(LC_ALL, i % 2 ? "C.UTF-8" : "C") != NULL;
        locale_t l = newlocale(LC_ALL_MASK, "C.UTF-8", (locale_t)0);
        if (l != (locale_t)0) {
            found++;
            freelocale(l);
        }
        time_t t = 86400 * i;
        struct tm tm;
        found += localtime_r(&t, &tm) != NULL;
    }
    looking = 0;
    printf("lookups found %lu\n", found);
    return NULL;
}

static void *opener(void *arg) {
    (void)arg;
    unsigned long h = 0;
    int n = 0;
    while (looking && n < 20000) {
        int fd = open(dir, O_RDONLY);
        h = h * 31 + (unsigned long)fd;
        n++;
        if (fd >= 0) close(fd);
    }
    printf("opener: numbers hash %lx\n", h);
    return NULL;
}

int main(int argc, char **argv) {
    dir = argc > 1 ? argv[1] : ".";
    pthread_t a, b;
    pthread_create(&a, NULL, lookups, NULL);
    pthread_create(&b, NULL, opener, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
