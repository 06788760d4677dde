/* acpd-relay: what an editor's terminal runs for one sandboxed acpd command.
 *
 *     acpd-relay SOCKET TOKEN -- BASH -c COMMAND
 *
 * It connects to the acpd daemon listening on SOCKET (a one-use socket in the daemon's
 * private run directory), hands it its standard input, output and error (the editor's
 * terminal, as SCM_RIGHTS) with TOKEN and its environment, and waits.  The daemon runs the
 * command it judged for that token in its sandbox parent (sandbox/parent.py) with those
 * descriptors, then sends the command's exit status, which this process exits with.  The
 * words after `--` are for the editor to show; they are not read here: what runs is what
 * the daemon judged.
 *
 * Killing this process (the editor's terminal/kill, Ctrl-C in its terminal) closes the
 * connection, and the daemon then kills the command's whole PID namespace.  When the
 * command was not run it exits 125 with the reason on stderr.
 *
 * Written in C because it starts for every command the editor runs: a Python client costs
 * more than the sandbox start it saves (docs/sandbox.md, "Cost").  Built by
 * scripts/build_native.py; without it the editor runs the sh launcher instead
 * (daemon/confine.py).
 *
 * Wire (a stream socket): LEN (4 bytes, little-endian) then LEN bytes: "acpd-relay 1",
 * TOKEN, then each environment entry, every one NUL-terminated; the three descriptors ride
 * on the first bytes.  The reply, up to the daemon's close: "X" + exit code (4 bytes,
 * little-endian), or "F" + the reason the command was not run.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define NOT_RUN 125
#define MAGIC "acpd-relay 1"
#define MAX_BODY (8u << 20) /* the daemon refuses more; an environment is far smaller */

extern char **environ;

static int fail(const char *what, int err) {
    if (err)
        fprintf(stderr, "acpd sandbox: NOT RUN: %s: %s\n", what, strerror(err));
    else
        fprintf(stderr, "acpd sandbox: NOT RUN: %s\n", what);
    return NOT_RUN;
}

/* A closed standard descriptor would make sendmsg fail: give it /dev/null. */
static void ensure_open(int fd) {
    if (fcntl(fd, F_GETFD) != -1)
        return;
    int null = open("/dev/null", O_RDWR);
    if (null >= 0 && null != fd) {
        dup2(null, fd);
        close(null);
    }
}

static char *append(char *at, const char *text) {
    size_t n = strlen(text) + 1;
    memcpy(at, text, n);
    return at + n;
}

/* The request: LEN, the magic, the token and the environment. */
static char *request(const char *token, size_t *total) {
    size_t body = sizeof MAGIC + strlen(token) + 1;
    for (char **e = environ; *e; e++)
        body += strlen(*e) + 1;
    if (body > MAX_BODY)
        return NULL;
    char *buf = malloc(4 + body);
    if (!buf)
        return NULL;
    uint32_t len = (uint32_t)body;
    for (int i = 0; i < 4; i++)
        buf[i] = (char)((len >> (8 * i)) & 0xff);
    char *at = append(buf + 4, MAGIC);
    at = append(at, token);
    for (char **e = environ; *e; e++)
        at = append(at, *e);
    *total = 4 + body;
    return buf;
}

static int send_request(int sock, const char *buf, size_t total) {
    int fds[3] = {0, 1, 2};
    char control[CMSG_SPACE(sizeof fds)];
    memset(control, 0, sizeof control);
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = total};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                         .msg_controllen = sizeof control};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(c), fds, sizeof fds);
    ssize_t sent;
    do
        sent = sendmsg(sock, &msg, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    if (sent < 0)
        return -1;
    for (size_t done = (size_t)sent; done < total;) { /* the descriptors went with the first */
        ssize_t n = send(sock, buf + done, total - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3 || (argc > 3 && strcmp(argv[3], "--") != 0)) {
        fprintf(stderr, "usage: acpd-relay SOCKET TOKEN [-- COMMAND...]\n"
                        "(run by an editor's terminal for acpd; not meant to be run by hand)\n");
        return NOT_RUN;
    }
    for (int fd = 0; fd < 3; fd++)
        ensure_open(fd);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(argv[1]) >= sizeof addr.sun_path)
        return fail("the socket path is too long", 0);
    strcpy(addr.sun_path, argv[1]);
    int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0)
        return fail("socket", errno);
    if (connect(sock, (struct sockaddr *)&addr, sizeof addr) != 0)
        return fail("cannot reach the acpd daemon", errno);
    size_t total = 0;
    char *buf = request(argv[2], &total);
    if (!buf)
        return fail("the environment is too large to hand over", 0);
    int sent = send_request(sock, buf, total), send_errno = errno;
    free(buf);
    /* Nothing more to send: the daemon reads an end of stream only when this process is
       gone (it then kills the command). */
    char reply[4096];
    size_t got = 0;
    while (got < sizeof reply - 1) {
        ssize_t n = read(sock, reply + got, sizeof reply - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (got >= 5 && reply[0] == 'X') {
        int32_t code = 0;
        for (int i = 0; i < 4; i++)
            code |= (int32_t)((uint32_t)(unsigned char)reply[1 + i] << (8 * i));
        return code & 0xff;
    }
    if (got >= 1 && reply[0] == 'F') {
        reply[got] = '\0';
        return fail(reply + 1, 0);
    }
    if (sent != 0) /* and no reply saying why */
        return fail("cannot hand the command over to the acpd daemon", send_errno);
    return fail("the acpd daemon ended before the command did (the command was killed)", 0);
}
