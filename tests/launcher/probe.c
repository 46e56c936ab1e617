/* The program the launcher tests run under `p2pshim run`. It makes no CUDA
 * call. Commands:
 *   env          prints LD_PRELOAD, every P2PSHIM_* variable (sorted) and
 *                which preloaded libraries are really mapped
 *   exit N       exits with status N
 *   signal N     kills itself with signal N
 *   wait FILE [SIG...]
 *                creates FILE, then counts the signals SIG (numbers;
 *                default SIGINT and SIGTERM) for up to 10 s; after the
 *                first, waits 300 ms more for a duplicate, prints "got N
 *                signal(s)" (and "value V" for a value queued with one)
 *                and exits with 40 + N
 *   wait-group FILE SIG
 *                as wait FILE SIG, after sending SIG to its own process
 *                group (the launcher among it)
 *   sigqueue PID SIG VALUE
 *                queues SIG with the integer VALUE to PID */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "mapped NAME" for each library of interest found in /proc/self/maps. */
static void print_mapped(void)
{
    static const char *const names[] = {"libp2pshim.so", "liblt_dummy.so"};
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int seen[2] = {0, 0};
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        for (int i = 0; i < 2; i++)
            if (strstr(line, names[i]) != NULL)
                seen[i] = 1;
    if (f != NULL)
        fclose(f);
    for (int i = 0; i < 2; i++)
        if (seen[i])
            printf("mapped %s\n", names[i]);
}

static void print_env(void)
{
    const char *pre = getenv("LD_PRELOAD");
    printf("LD_PRELOAD=%s\n", pre ? pre : "(unset)");
    size_t n = 0;
    for (char **e = environ; *e; e++)
        n++;
    char **vars = calloc(n + 1, sizeof *vars);
    size_t k = 0;
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "P2PSHIM_", 8) == 0)
            vars[k++] = *e;
    qsort(vars, k, sizeof *vars, by_string);
    for (size_t i = 0; i < k; i++)
        printf("%s\n", vars[i]);
    free(vars);
    print_mapped();
}

static volatile sig_atomic_t signals, queued, value;

static void count_signal(int sig, siginfo_t *si, void *uctx)
{
    (void)sig;
    (void)uctx;
    signals++;
    if (si != NULL && si->si_code == SI_QUEUE) {
        queued = 1;
        value = si->si_value.sival_int;
    }
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* sigs: n signal numbers as text (none: SIGINT and SIGTERM). group: send
 * the first to the own process group once ready. */
static int wait_for_signals(const char *ready, char **sigs, int n, int group)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = count_signal;
    sa.sa_flags = SA_SIGINFO;
    if (n == 0) {
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
    }
    for (int i = 0; i < n; i++)
        sigaction(atoi(sigs[i]), &sa, NULL);
    FILE *f = fopen(ready, "w");
    if (f == NULL)
        return 1;
    fclose(f);
    if (group && n > 0)
        kill(0, atoi(sigs[0]));
    for (int i = 0; i < 1000 && signals == 0; i++)
        sleep_ms(10);
    if (signals == 0)
        return 2;
    sleep_ms(300);
    printf("got %d signal(s)\n", (int)signals);
    if (queued)
        printf("value %d\n", (int)value);
    return 40 + signals;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "env") == 0) {
        print_env();
        return 0;
    }
    if (argc >= 3 && strcmp(argv[1], "exit") == 0)
        return atoi(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "signal") == 0) {
        int sig = atoi(argv[2]);
        signal(sig, SIG_DFL);
        fflush(stdout);
        kill(getpid(), sig);
        return 99;
    }
    if (argc >= 3 && strcmp(argv[1], "wait") == 0)
        return wait_for_signals(argv[2], argv + 3, argc - 3, 0);
    if (argc == 4 && strcmp(argv[1], "wait-group") == 0)
        return wait_for_signals(argv[2], argv + 3, 1, 1);
    if (argc == 5 && strcmp(argv[1], "sigqueue") == 0)
        return sigqueue(atoi(argv[2]), atoi(argv[3]),
                        (union sigval){.sival_int = atoi(argv[4])}) == 0 ? 0 : 1;
    fprintf(stderr, "usage: lt_probe env | exit N | signal N | wait FILE [SIG...] | "
                    "wait-group FILE SIG | sigqueue PID SIG VALUE\n");
    return 64;
}
