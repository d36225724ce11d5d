/* Atomicity violation: withdraw() checks the balance under the lock, then
 * takes the money under the lock again. Two withdrawals whose checks both
 * come before either update overdraw the account. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int balance = 100;

static void *withdraw(void *arg) {
    int amount = *(int *)arg;
    pthread_mutex_lock(&lock);
    int enough = balance >= amount;
    pthread_mutex_unlock(&lock);
    if (enough) {
        pthread_mutex_lock(&lock);
        balance -= amount;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void) {
    pthread_t a, b;
    int amount = 80;
    pthread_create(&a, NULL, withdraw, &amount);
    pthread_create(&b, NULL, withdraw, &amount);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("balance %d\n", balance);
    return balance < 0;
}
