/* A helper library built WITHOUT instrumentation: it waits and wakes with raw
 * futex system calls, as libgomp and other runtimes do, where rr-lite's
 * interposition cannot see them. */
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

void helper_wait(atomic_int *word) {
    while (atomic_load(word) == 0)
        syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}

void helper_wake(atomic_int *word) {
    atomic_store(word, 1);
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
