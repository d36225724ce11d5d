// Code that detects ThreadSanitizer (-fsanitize=thread) and calls its
// dynamic annotations, as moodycamel's readerwriterqueue, Abseil and folly
// do: the program must link against rr-lite's runtime (it did not:
// undefined references to AnnotateHappensBefore and AnnotateHappensAfter),
// and record and replay.
#include <pthread.h>
#include <stdio.h>

// gcc says -fsanitize=thread with __SANITIZE_THREAD__, clang with
// __has_feature(thread_sanitizer).
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#error "built without -fsanitize=thread"
#endif
void AnnotateHappensBefore(const char *file, int line, const volatile void *addr);
void AnnotateHappensAfter(const char *file, int line, const volatile void *addr);
void AnnotateBenignRaceSized(const char *file, int line, const volatile void *addr, long size,
                             const char *description);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
void AnnotateThreadName(const char *file, int line, const char *name);

static int slots[64];
static int ready[64];
static int hits;

static void *producer(void *arg) {
    AnnotateThreadName(__FILE__, __LINE__, "producer");
    for (int i = 0; i < 64; i++) {
        slots[i] = i * i;
        AnnotateHappensBefore(__FILE__, __LINE__, &slots[i]);
        __atomic_store_n(&ready[i], 1, __ATOMIC_RELAXED);
    }
    return arg;
}

int main(void) {
    AnnotateBenignRaceSized(__FILE__, __LINE__, &hits, sizeof hits, "statistics");
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    long sum = 0;
    for (int i = 0; i < 64; i++) {
        while (!__atomic_load_n(&ready[i], __ATOMIC_RELAXED)) hits++;
        AnnotateHappensAfter(__FILE__, __LINE__, &slots[i]);
        sum += slots[i];
    }
    AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
    hits = hits > 0;
    AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
    pthread_join(t, NULL);
    printf("sum %ld, polled %s\n", sum, hits ? "yes" : "no");
    return 0;
}
