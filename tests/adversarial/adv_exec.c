/* Every way of exec: a child with a run log makes COPIES cross-GPU
 * copies, then replaces itself with /bin/true. The run log must hold a
 * decision for each copy and the footer written before the exec.
 *
 *   execve | fexecve       the libc calls (the shim wraps them)
 *   execveat | execveat_fd  execveat(2) by path, and by descriptor with
 *                           AT_EMPTY_PATH
 *   sys_execve | sys_execveat  syscall(SYS_execve), syscall(SYS_execveat) */
#define _GNU_SOURCE
#include "adv_common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define COPIES 50
#define TARGET "/bin/true"

static void exec_by(const char *how)
{
    char *args[] = {TARGET, NULL};
    int fd = open(TARGET, O_RDONLY | O_CLOEXEC);
    if (strcmp(how, "execve") == 0)
        execve(TARGET, args, environ);
    else if (strcmp(how, "fexecve") == 0)
        fexecve(fd, args, environ);
    else if (strcmp(how, "execveat") == 0)
        execveat(AT_FDCWD, TARGET, args, environ, 0);
    else if (strcmp(how, "execveat_fd") == 0)
        execveat(fd, "", args, environ, AT_EMPTY_PATH);
    else if (strcmp(how, "sys_execve") == 0)
        syscall(SYS_execve, TARGET, args, environ);
    else if (strcmp(how, "sys_execveat") == 0)
        syscall(SYS_execveat, AT_FDCWD, TARGET, args, environ, 0);
    fprintf(stderr, "%s: %s\n", how, strerror(errno));
    _exit(126);
}

static void exec_child(const char *how)
{
    adv_cuda();
    CUdeviceptr a = pl_alloc(bt_env.ctx[0], 4096), b = pl_alloc(bt_env.ctx[1], 4096);
    for (int i = 0; i < COPIES; i++)
        PL_OK(cuMemcpyPeer(b, bt_env.ctx[1], a, bt_env.ctx[0], 4096));
    if (pl_failures != 0)
        _exit(1);
    exec_by(how);
}

static int case_exec(int argc, char **argv)
{
    (void)argc;
    int status = 0;
    char logs[512], pattern[600];
    snprintf(logs, sizeof logs, "%s", adv_path("logs"));
    mkdir(logs, 0700);
    snprintf(pattern, sizeof pattern, "%s/run-%%p.jsonl", logs);
    setenv("P2PSHIM_RUN_LOG", pattern, 1);
    pid_t pid = fork();
    if (pid == 0)
        exec_child(argv[0]);
    PL_EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid, "fork: %s", strerror(errno));
    adv_status(TARGET, status);
    if (adv_shim) {
        adv_say("decisions in the run log: %ld", adv_log_count(logs, "decision"));
        adv_say("footers in the run log: %ld", adv_log_count(logs, "footer"));
    } else {
        /* No log without the shim: the lines its run must print. */
        adv_say("decisions in the run log: %d", COPIES);
        adv_say("footers in the run log: 1");
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct adv_case cases[] = {
        {"execve", case_exec},     {"fexecve", case_exec},    {"execveat", case_exec},
        {"execveat_fd", case_exec}, {"sys_execve", case_exec}, {"sys_execveat", case_exec},
    };
    return adv_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
