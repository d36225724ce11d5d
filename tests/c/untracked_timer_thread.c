/* A SIGEV_THREAD timer: glibc runs the notification function on a thread it
 * starts itself (not through the pthread_create the runtime interposes).
 * The function writes `fired` under a mutex the main thread waits on, so
 * the recording cannot be complete: it must say so, and replay must refuse
 * it, rather than replay a run without the timer's thread. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static int fired;

static void tick(union sigval v) {
    pthread_mutex_lock(&lock);
    fired = v.sival_int;
    pthread_cond_signal(&done);
    pthread_mutex_unlock(&lock);
}

int main(void) {
    struct sigevent ev = {0};
    ev.sigev_notify = SIGEV_THREAD;
    ev.sigev_notify_function = tick;
    ev.sigev_value.sival_int = 7;
    timer_t timer;
    if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0) return 3;
    struct itimerspec once = {{0, 0}, {0, 1000000}};
    if (timer_settime(timer, 0, &once, NULL) != 0) return 4;
    pthread_mutex_lock(&lock);
    while (!fired) pthread_cond_wait(&done, &lock);
    pthread_mutex_unlock(&lock);
    timer_delete(timer);
    printf("fired %d\n", fired);
    return 0;
}
