/* Forks: the child uses memory allocated before the fork (realloc, free),
 * starts a thread, then runs this program again (exec), which prints and
 * exits with 7; the parent waits for it and prints its status. Neither the
 * child nor the program it runs may write into the parent's trace. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *child_thread(void *arg) {
    char *text = arg;
    strcat(text, " and its thread");
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "exec") == 0) {
        printf("exec'd child\n");
        return 7;
    }
    char *text = malloc(16);
    strcpy(text, "child");
    printf("before\n");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
        text = realloc(text, 4096);
        pthread_t t;
        if (pthread_create(&t, NULL, child_thread, text) != 0) _exit(3);
        pthread_join(t, NULL);
        printf("%s\n", text);
        fflush(stdout);
        free(text);
        execl("/proc/self/exe", argv[0], "exec", (char *)NULL);
        _exit(4);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    free(text);
    return 0;
}
