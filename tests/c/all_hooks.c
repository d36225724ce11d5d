/* Calls every __tsan_* function the rr-lite runtime exports, declared here
 * with the ABI's C prototypes: linking proves each symbol exists, running
 * proves each works. Atomic operations must return the right values; any
 * wrong value makes the exit status non-zero (and is printed). Plain access
 * hooks are given a local aligned buffer. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef unsigned char a8;
typedef unsigned short a16;
typedef unsigned int a32;
typedef unsigned long a64;
typedef unsigned __int128 a128;

void __tsan_init(void);
void __tsan_func_entry(void *caller);
void __tsan_func_exit(void *unused); /* gcc's builtin takes one; the ABI ignores it */

#define ACCESS_DECLS(n)                                                  \
    void __tsan_read##n(void *p);                                        \
    void __tsan_write##n(void *p);                                       \
    void __tsan_unaligned_read##n(void *p);                              \
    void __tsan_unaligned_write##n(void *p);                             \
    void __tsan_volatile_read##n(void *p);                               \
    void __tsan_volatile_write##n(void *p);                              \
    void __tsan_unaligned_volatile_read##n(void *p);                     \
    void __tsan_unaligned_volatile_write##n(void *p);                    \
    void __tsan_read##n##_pc(void *p, void *pc);                         \
    void __tsan_write##n##_pc(void *p, void *pc);                        \
    void __tsan_read_write##n(void *p);                                  \
    void __tsan_unaligned_read_write##n(void *p);
ACCESS_DECLS(1)
ACCESS_DECLS(2)
ACCESS_DECLS(4)
ACCESS_DECLS(8)
ACCESS_DECLS(16)

void __tsan_read_range(void *p, long size);
void __tsan_write_range(void *p, long size);
void __tsan_read_range_pc(void *p, unsigned long size, void *pc);
void __tsan_write_range_pc(void *p, unsigned long size, void *pc);
void __tsan_vptr_update(void *vptr, void *new_val);
void __tsan_vptr_read(void *vptr);
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
void *__tsan_memcpy(void *dst, const void *src, size_t n);
void *__tsan_memmove(void *dst, const void *src, size_t n);
void *__tsan_memset(void *dst, int c, size_t n);

void __tsan_mutex_create(void *addr, unsigned flags);
void __tsan_mutex_destroy(void *addr, unsigned flags);
void __tsan_mutex_pre_lock(void *addr, unsigned flags);
void __tsan_mutex_post_lock(void *addr, unsigned flags, int recursion);
int __tsan_mutex_pre_unlock(void *addr, unsigned flags);
void __tsan_mutex_post_unlock(void *addr, unsigned flags);
void __tsan_mutex_pre_signal(void *addr, unsigned flags);
void __tsan_mutex_post_signal(void *addr, unsigned flags);
void __tsan_mutex_pre_divert(void *addr, unsigned flags);
void __tsan_mutex_post_divert(void *addr, unsigned flags);
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
void __tsan_flush_memory(void);

void *__tsan_external_register_tag(const char *object_type);
void __tsan_external_register_header(void *tag, const char *header);
void __tsan_external_assign_tag(void *addr, void *tag);
void __tsan_external_read(void *addr, void *caller_pc, void *tag);
void __tsan_external_write(void *addr, void *caller_pc, void *tag);

void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
void __tsan_set_fiber_name(void *fiber, const char *name);

void __tsan_atomic_thread_fence(int mo);
void __tsan_atomic_signal_fence(int mo);

#define ATOMIC_DECLS(n)                                                                     \
    a##n __tsan_atomic##n##_load(const volatile void *a, int mo);                           \
    void __tsan_atomic##n##_store(volatile void *a, a##n v, int mo);                        \
    a##n __tsan_atomic##n##_exchange(volatile void *a, a##n v, int mo);                     \
    a##n __tsan_atomic##n##_fetch_add(volatile void *a, a##n v, int mo);                    \
    a##n __tsan_atomic##n##_fetch_sub(volatile void *a, a##n v, int mo);                    \
    a##n __tsan_atomic##n##_fetch_and(volatile void *a, a##n v, int mo);                    \
    a##n __tsan_atomic##n##_fetch_or(volatile void *a, a##n v, int mo);                     \
    a##n __tsan_atomic##n##_fetch_xor(volatile void *a, a##n v, int mo);                    \
    a##n __tsan_atomic##n##_fetch_nand(volatile void *a, a##n v, int mo);                   \
    _Bool __tsan_atomic##n##_compare_exchange_strong(volatile void *a, void *c, a##n v,       \
                                                   int mo, int fmo);                        \
    _Bool __tsan_atomic##n##_compare_exchange_weak(volatile void *a, void *c, a##n v, int mo, \
                                                 int fmo);                                  \
    a##n __tsan_atomic##n##_compare_exchange_val(volatile void *a, a##n c, a##n v, int mo,  \
                                                 int fmo);
ATOMIC_DECLS(8)
ATOMIC_DECLS(16)
ATOMIC_DECLS(32)
ATOMIC_DECLS(64)
ATOMIC_DECLS(128)

enum { RELAXED = 0, CONSUME = 1, ACQUIRE = 2, RELEASE = 3, ACQ_REL = 4, SEQ_CST = 5 };

static int failures;

static void check(int ok, const char *what, int line) {
    if (!ok) {
        printf("WRONG: %s (line %d)\n", what, line);
        failures++;
    }
}
#define CHECK(cond) check((cond), #cond, __LINE__)

/* The same sequence for every width: each result is checked. */
#define ATOMIC_TEST(n)                                                                     \
    static void atomic_test_##n(void) {                                                    \
        static volatile a##n x __attribute__((aligned(16)));                               \
        __tsan_atomic##n##_store(&x, 10, RELEASE);                                         \
        CHECK(__tsan_atomic##n##_load(&x, ACQUIRE) == 10);                                 \
        __tsan_atomic##n##_store(&x, 11, SEQ_CST);                                         \
        CHECK(__tsan_atomic##n##_load(&x, SEQ_CST) == 11);                                 \
        CHECK(__tsan_atomic##n##_load(&x, RELAXED) == 11);                                 \
        CHECK(__tsan_atomic##n##_exchange(&x, 20, ACQ_REL) == 11);                         \
        CHECK(__tsan_atomic##n##_fetch_add(&x, 5, RELAXED) == 20);                         \
        CHECK(__tsan_atomic##n##_fetch_sub(&x, 3, SEQ_CST) == 25);                         \
        CHECK(__tsan_atomic##n##_fetch_and(&x, 0x0f, ACQUIRE) == 22);                      \
        CHECK(__tsan_atomic##n##_fetch_or(&x, 0x30, RELEASE) == 6);                        \
        CHECK(__tsan_atomic##n##_fetch_xor(&x, 0x0f, ACQ_REL) == 0x36);                    \
        CHECK(__tsan_atomic##n##_fetch_nand(&x, 0x0f, SEQ_CST) == 0x39);                   \
        CHECK(__tsan_atomic##n##_load(&x, CONSUME) == (a##n)~(a##n)9);                     \
        a##n expected = 1;                                                                 \
        CHECK(__tsan_atomic##n##_compare_exchange_strong(&x, &expected, 3, SEQ_CST,        \
                                                         RELAXED) == 0);                   \
        CHECK(expected == (a##n)~(a##n)9);                                                 \
        CHECK(__tsan_atomic##n##_compare_exchange_strong(&x, &expected, 3, ACQ_REL,        \
                                                         ACQUIRE) == 1);                   \
        CHECK(__tsan_atomic##n##_load(&x, SEQ_CST) == 3);                                  \
        expected = 3;                                                                      \
        int tries = 0;                                                                     \
        while (!__tsan_atomic##n##_compare_exchange_weak(&x, &expected, 4, SEQ_CST,        \
                                                         SEQ_CST) &&                       \
               tries++ < 1000) {                                                           \
            CHECK(expected == 3); /* a spurious failure keeps the value */                 \
        }                                                                                  \
        CHECK(__tsan_atomic##n##_load(&x, SEQ_CST) == 4);                                  \
        expected = 99;                                                                     \
        CHECK(__tsan_atomic##n##_compare_exchange_weak(&x, &expected, 5, RELAXED,          \
                                                       RELAXED) == 0);                     \
        CHECK(expected == 4);                                                              \
        CHECK(__tsan_atomic##n##_compare_exchange_val(&x, 4, 7, SEQ_CST, RELAXED) == 4);   \
        CHECK(__tsan_atomic##n##_compare_exchange_val(&x, 1, 9, SEQ_CST, RELAXED) == 7);   \
        CHECK(__tsan_atomic##n##_load(&x, SEQ_CST) == 7);                                  \
    }
ATOMIC_TEST(8)
ATOMIC_TEST(16)
ATOMIC_TEST(32)
ATOMIC_TEST(64)
ATOMIC_TEST(128)

static void atomic_test_wide_values(void) {
    static volatile a64 x;
    __tsan_atomic64_store(&x, 0xfedcba9876543210ull, SEQ_CST);
    CHECK(__tsan_atomic64_fetch_add(&x, 0x10, SEQ_CST) == 0xfedcba9876543210ull);
    CHECK(__tsan_atomic64_load(&x, SEQ_CST) == 0xfedcba9876543220ull);
    static volatile a128 y __attribute__((aligned(16)));
    a128 big = ((a128)0x0123456789abcdefull << 64) | 0xfedcba9876543210ull;
    __tsan_atomic128_store(&y, big, SEQ_CST);
    CHECK(__tsan_atomic128_load(&y, SEQ_CST) == big);
    CHECK(__tsan_atomic128_fetch_add(&y, 1, SEQ_CST) == big);
    CHECK(__tsan_atomic128_load(&y, SEQ_CST) == big + 1);
    static volatile a8 b;
    __tsan_atomic8_store(&b, 250, SEQ_CST);
    CHECK(__tsan_atomic8_fetch_add(&b, 10, SEQ_CST) == 250);
    CHECK(__tsan_atomic8_load(&b, SEQ_CST) == 4); /* wraps */
}

static void plain_hooks(void) {
    static unsigned char buf[64] __attribute__((aligned(16)));
    void *pc = (void *)&plain_hooks;
#define CALL_ACCESS(n)                                                                     \
    __tsan_read##n(buf);                                                                   \
    __tsan_write##n(buf);                                                                  \
    __tsan_unaligned_read##n(buf + 1);                                                     \
    __tsan_unaligned_write##n(buf + 1);                                                    \
    __tsan_volatile_read##n(buf);                                                          \
    __tsan_volatile_write##n(buf);                                                         \
    __tsan_unaligned_volatile_read##n(buf + 1);                                            \
    __tsan_unaligned_volatile_write##n(buf + 1);                                           \
    __tsan_read##n##_pc(buf, pc);                                                          \
    __tsan_write##n##_pc(buf, pc);                                                         \
    __tsan_read_write##n(buf);                                                             \
    __tsan_unaligned_read_write##n(buf + 1);
    CALL_ACCESS(1)
    CALL_ACCESS(2)
    CALL_ACCESS(4)
    CALL_ACCESS(8)
    CALL_ACCESS(16)
    __tsan_read_range(buf, 32);
    __tsan_write_range(buf, 32);
    __tsan_read_range_pc(buf, 32, pc);
    __tsan_write_range_pc(buf, 32, pc);
    void *vptr_slot[1] = {0};
    __tsan_vptr_update(vptr_slot, buf);
    __tsan_vptr_read(vptr_slot);
    __tsan_acquire(buf);
    __tsan_release(buf);
}

static void mem_hooks(void) {
    static char a[100], b[100];
    for (int i = 0; i < 100; i++) a[i] = (char)i;
    CHECK(__tsan_memcpy(b, a, 100) == b);
    CHECK(memcmp(a, b, 100) == 0);
    CHECK(__tsan_memmove(b + 1, b, 50) == b + 1);
    CHECK(b[1] == 0 && b[50] == 49 && b[51] == 51);
    CHECK(__tsan_memset(b, 7, 10) == b);
    CHECK(b[0] == 7 && b[9] == 7 && b[10] == 9);
}

static void annotation_hooks(void) {
    static int m;
    __tsan_mutex_create(&m, 0);
    __tsan_mutex_pre_lock(&m, 0);
    __tsan_mutex_post_lock(&m, 0, 0);
    __tsan_mutex_pre_signal(&m, 0);
    __tsan_mutex_post_signal(&m, 0);
    __tsan_mutex_pre_divert(&m, 0);
    __tsan_mutex_post_divert(&m, 0);
    (void)__tsan_mutex_pre_unlock(&m, 0);
    __tsan_mutex_post_unlock(&m, 0);
    __tsan_mutex_destroy(&m, 0);
    __tsan_ignore_thread_begin();
    __tsan_ignore_thread_end();
    __tsan_flush_memory();
    static int object;
    void *tag = __tsan_external_register_tag("all_hooks object");
    __tsan_external_register_header(tag, "all_hooks header");
    __tsan_external_assign_tag(&object, tag);
    __tsan_external_read(&object, (void *)&annotation_hooks, tag);
    __tsan_external_write(&object, (void *)&annotation_hooks, tag);
    void *me = __tsan_get_current_fiber();
    void *fiber = __tsan_create_fiber(0);
    __tsan_set_fiber_name(fiber, "all_hooks fiber");
    __tsan_switch_to_fiber(me, 0);
    if (fiber != me) __tsan_destroy_fiber(fiber);
    __tsan_atomic_thread_fence(SEQ_CST);
    __tsan_atomic_signal_fence(SEQ_CST);
}

int main(void) {
    __tsan_init();
    __tsan_func_entry(__builtin_return_address(0));
    plain_hooks();
    mem_hooks();
    annotation_hooks();
    atomic_test_8();
    atomic_test_16();
    atomic_test_32();
    atomic_test_64();
    atomic_test_128();
    atomic_test_wide_values();
    __tsan_func_exit(NULL);
    printf("%s (%d wrong)\n", failures ? "WRONG" : "all hooks ok", failures);
    return failures != 0;
}
