/* Destructors that run after a thread's start routine has ended (by
 * returning or by pthread_exit): a pthread_key destructor and a
 * thread-local destructor (registered the way C++ thread_local registers
 * them), each of which takes a mutex, counts, allocates and prints. Which
 * thread's destructors run first depends on the interleaving; main prints
 * the texts the key destructors left, and their addresses, at the end. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4

extern void *__dso_handle;
int __cxa_thread_atexit_impl(void (*dtor)(void *), void *obj, void *dso);

static pthread_key_t key;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int order;
static char *texts[THREADS];

static int next_in_order(void) {
    pthread_mutex_lock(&m);
    int n = ++order;
    pthread_mutex_unlock(&m);
    return n;
}

static void key_destructor(void *value) {
    long id = (long)value - 1;
    char *text = malloc(64);
    snprintf(text, 64, "key destructor of thread %ld came %d", id, next_in_order());
    printf("%s\n", text);
    texts[id] = text;
}

static void thread_local_destructor(void *value) {
    long id = (long)value;
    char *text = malloc(64);
    snprintf(text, 64, "thread-local destructor of thread %ld came %d", id, next_in_order());
    printf("%s\n", text);
    free(text);
}

static void *worker(void *arg) {
    long id = (long)arg;
    pthread_setspecific(key, (void *)(id + 1));
    __cxa_thread_atexit_impl(thread_local_destructor, (void *)id, &__dso_handle);
    if (id % 2) pthread_exit(NULL);
    return NULL;
}

int main(void) {
    pthread_key_create(&key, key_destructor);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        printf("%s at %p\n", texts[i], (void *)texts[i]);
        free(texts[i]);
    }
    return 0;
}
