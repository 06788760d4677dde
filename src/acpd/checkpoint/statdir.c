/* acpd's checkpoint scanner's listing of one directory, in C (see statdir.py).
 *
 * stat_dir(fd) -> (names, stats, errors)
 *   Every entry of the directory open at `fd` but `.` and `..`, each lstat'ed
 *   (fstatat with AT_SYMLINK_NOFOLLOW) relative to `fd`:
 *   - names:  the entry names, decoded as os.listdir decodes them;
 *   - stats:  for each name, a Stat with the fields the scanner reads, named as
 *             os.stat_result names them (st_mode, st_nlink, st_size, st_mtime_ns,
 *             st_ctime_ns, st_ino, st_dev);
 *   - errors: (name, errno) for entries that could not be lstat'ed. An entry gone
 *             between the listing and its lstat (ENOENT) is left out, as the pure
 *             scanner leaves it out.
 *   Raises OSError when the directory cannot be listed.
 *
 * The same thing in Python is os.listdir plus one os.lstat per name; the syscalls are
 * the same, but a stat_result (with float times and nanosecond integers computed in
 * Python longs) is built per entry. Here the listing and the lstats run without the
 * GIL, and the objects are built after, with only the fields the scanner uses.
 * The fd is not consumed: the listing reads a duplicate from the start and rewinds
 * it after (a duplicate shares the offset), as os.listdir(fd) does.
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE
#include <Python.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    char *name;
    int error; /* 0, or the errno of its lstat */
    struct stat st;
} row_t;

typedef struct {
    row_t *rows;
    size_t len, cap;
    int error; /* the errno that stopped the listing, 0 when it ended */
} listing_t;

static PyTypeObject StatType;

static PyStructSequence_Field stat_fields[] = {
    {"st_mode", "the file type and permission bits"},
    {"st_nlink", "number of hard links"},
    {"st_size", "size in bytes"},
    {"st_mtime_ns", "modification time in nanoseconds"},
    {"st_ctime_ns", "status change time in nanoseconds"},
    {"st_ino", "inode"},
    {"st_dev", "device"},
    {NULL, NULL},
};

static PyStructSequence_Desc stat_desc = {
    "acpd_statdir.Stat",
    "The lstat fields the checkpoint scanner reads, named as os.stat_result's.",
    stat_fields,
    7,
};

static int push(listing_t *out, const char *name) {
    if (out->len == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 64;
        row_t *grown = realloc(out->rows, cap * sizeof *grown);
        if (grown == NULL)
            return ENOMEM;
        out->rows = grown;
        out->cap = cap;
    }
    row_t *row = &out->rows[out->len];
    row->name = strdup(name);
    if (row->name == NULL)
        return ENOMEM;
    row->error = 0;
    out->len++;
    return 0;
}

/* Runs without the GIL: only C state is touched. */
static void list_directory(int fd, listing_t *out) {
    int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0) {
        out->error = errno;
        return;
    }
    DIR *dir = fdopendir(dup_fd);
    if (dir == NULL) {
        out->error = errno;
        close(dup_fd);
        return;
    }
    rewinddir(dir); /* a duplicate shares the offset: read from the start */
    for (;;) {
        errno = 0;
        struct dirent *entry = readdir(dir);
        if (entry == NULL) {
            out->error = errno;
            break;
        }
        const char *name = entry->d_name;
        if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
            continue;
        int failed = push(out, name);
        if (failed) {
            out->error = failed;
            break;
        }
        row_t *row = &out->rows[out->len - 1];
        if (fstatat(dup_fd, name, &row->st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT) { /* gone while we looked */
                free(row->name);
                out->len--;
                continue;
            }
            row->error = errno;
        }
    }
    rewinddir(dir); /* leave the shared offset where it was found (as os.listdir does) */
    closedir(dir);
}

static long long nanoseconds(const struct timespec *t) {
    return (long long)t->tv_sec * 1000000000LL + (long long)t->tv_nsec;
}

static PyObject *make_stat(const struct stat *st) {
    PyObject *stat = PyStructSequence_New(&StatType);
    if (stat == NULL)
        return NULL;
    PyObject *fields[7] = {
        PyLong_FromUnsignedLong((unsigned long)st->st_mode),
        PyLong_FromUnsignedLongLong((unsigned long long)st->st_nlink),
        PyLong_FromLongLong((long long)st->st_size),
        PyLong_FromLongLong(nanoseconds(&st->st_mtim)),
        PyLong_FromLongLong(nanoseconds(&st->st_ctim)),
        PyLong_FromUnsignedLongLong((unsigned long long)st->st_ino),
        PyLong_FromUnsignedLongLong((unsigned long long)st->st_dev),
    };
    int ok = 1;
    for (int i = 0; i < 7; i++) {
        if (fields[i] == NULL)
            ok = 0;
        PyStructSequence_SET_ITEM(stat, i, fields[i]); /* NULL is fine: freed as NULL */
    }
    if (!ok) {
        Py_DECREF(stat);
        return NULL;
    }
    return stat;
}

static int append_new(PyObject *list, PyObject *item) {
    if (item == NULL)
        return -1;
    int failed = PyList_Append(list, item);
    Py_DECREF(item);
    return failed;
}

static PyObject *build_result(const listing_t *listing) {
    PyObject *names = PyList_New(0), *stats = PyList_New(0), *errors = PyList_New(0);
    if (names == NULL || stats == NULL || errors == NULL)
        goto fail;
    for (size_t i = 0; i < listing->len; i++) {
        const row_t *row = &listing->rows[i];
        PyObject *name = PyUnicode_DecodeFSDefault(row->name);
        if (name == NULL)
            goto fail;
        if (row->error) {
            if (append_new(errors, Py_BuildValue("(Ni)", name, row->error)) < 0)
                goto fail;
            continue;
        }
        if (append_new(names, name) < 0 || append_new(stats, make_stat(&row->st)) < 0)
            goto fail;
    }
    return Py_BuildValue("(NNN)", names, stats, errors);
fail:
    Py_XDECREF(names);
    Py_XDECREF(stats);
    Py_XDECREF(errors);
    return NULL;
}

static PyObject *stat_dir(PyObject *module, PyObject *arg) {
    int fd = PyObject_AsFileDescriptor(arg);
    if (fd < 0)
        return NULL;
    listing_t listing = {NULL, 0, 0, 0};
    Py_BEGIN_ALLOW_THREADS
    list_directory(fd, &listing);
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (listing.error) {
        errno = listing.error;
        PyErr_SetFromErrno(PyExc_OSError);
    } else {
        result = build_result(&listing);
    }
    for (size_t i = 0; i < listing.len; i++)
        free(listing.rows[i].name);
    free(listing.rows);
    return result;
}

static PyMethodDef methods[] = {
    {"stat_dir", stat_dir, METH_O,
     "stat_dir(fd) -> (names, stats, errors): every entry of the directory at fd, lstat'ed."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "acpd_statdir",
    "The checkpoint scanner's directory listing in C (src/acpd/checkpoint/statdir.c).",
    -1, methods,
};

PyMODINIT_FUNC PyInit_acpd_statdir(void) {
    if (StatType.tp_name == NULL && PyStructSequence_InitType2(&StatType, &stat_desc) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    Py_INCREF(&StatType);
    if (PyModule_AddObject(module, "Stat", (PyObject *)&StatType) < 0) {
        Py_DECREF(&StatType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
