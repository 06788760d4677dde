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
 * scan_dir(fd, prefix, previous, entries, multi, room) -> (names, stats, errors)
 *   stat_dir, but an unchanged regular file is kept here and left out of what it
 *   returns: when `previous[prefix + name]` is an Entry with `fast` set and the same
 *   ctime_ns, mtime_ns, size, ino and dev as the fresh lstat, it is stored as
 *   `entries[prefix + name]` (and the path added to `multi` when the file has several
 *   links), at most `room` of them. That is the scanner's hot test (scan.py
 *   `_directory`), made here so that the scan's loop in Python only sees what changed
 *   and the directories. An Entry without those attributes raises.
 *
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

/* What scan_dir keeps itself: an unchanged regular file's previous entry. */
typedef struct {
    PyObject *prefix, *previous, *entries, *multi;
    Py_ssize_t room; /* entries it may still add (the scan's max_entries) */
} keeper_t;

static PyObject *attr_fast, *attr_ctime, *attr_mtime, *attr_size, *attr_ino, *attr_dev;

/* 1: `field` of `entry` is the integer `want`; 0: it is not; -1: an error is set. */
static int field_is(PyObject *entry, PyObject *field, long long want) {
    PyObject *value = PyObject_GetAttr(entry, field);
    if (value == NULL)
        return -1;
    int overflow = 0;
    long long got = PyLong_AsLongLongAndOverflow(value, &overflow);
    Py_DECREF(value);
    if (got == -1 && PyErr_Occurred())
        return -1;
    return !overflow && got == want;
}

/* 1: `old` (an Entry) may be kept for this lstat (the scanner's hot test: saved or too
 * large, not racy, and the same ctime, mtime, size, inode and device); 0: not; -1: error. */
static int unchanged(PyObject *old, const struct stat *st) {
    PyObject *fast = PyObject_GetAttr(old, attr_fast);
    if (fast == NULL)
        return -1;
    int ok = PyObject_IsTrue(fast);
    Py_DECREF(fast);
    if (ok <= 0)
        return ok;
    const struct { PyObject *field; long long want; } tests[] = {
        {attr_ctime, nanoseconds(&st->st_ctim)},
        {attr_mtime, nanoseconds(&st->st_mtim)},
        {attr_size, (long long)st->st_size},
        {attr_ino, (long long)st->st_ino},
        {attr_dev, (long long)st->st_dev},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        ok = field_is(old, tests[i].field, tests[i].want);
        if (ok <= 0)
            return ok;
    }
    return 1;
}

/* 1: the row was kept (its previous entry is in entries); 0: it goes back to the caller;
 * -1: an error is set. */
static int keep(keeper_t *keeper, PyObject *name, const struct stat *st) {
    if (keeper == NULL || keeper->room <= 0 || !S_ISREG(st->st_mode))
        return 0;
    PyObject *rel = PyUnicode_Concat(keeper->prefix, name);
    if (rel == NULL)
        return -1;
    int kept = -1;
    PyObject *old = PyDict_GetItemWithError(keeper->previous, rel); /* borrowed */
    if (old == NULL) {
        kept = PyErr_Occurred() ? -1 : 0;
    } else {
        kept = unchanged(old, st);
        if (kept == 1 && (PyDict_SetItem(keeper->entries, rel, old) < 0
                          || (st->st_nlink > 1 && PySet_Add(keeper->multi, rel) < 0)))
            kept = -1;
    }
    Py_DECREF(rel);
    if (kept == 1)
        keeper->room--;
    return kept;
}

static PyObject *build_result(const listing_t *listing, keeper_t *keeper) {
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
        int kept = keep(keeper, name, &row->st);
        if (kept != 0) {
            Py_DECREF(name);
            if (kept < 0)
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

static PyObject *listed(PyObject *fd_object, keeper_t *keeper) {
    int fd = PyObject_AsFileDescriptor(fd_object);
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
        result = build_result(&listing, keeper);
    }
    for (size_t i = 0; i < listing.len; i++)
        free(listing.rows[i].name);
    free(listing.rows);
    return result;
}

static PyObject *stat_dir(PyObject *module, PyObject *fd) {
    return listed(fd, NULL);
}

static PyObject *scan_dir(PyObject *module, PyObject *args) {
    PyObject *fd;
    keeper_t keeper;
    if (!PyArg_ParseTuple(args, "OUO!O!O!n:scan_dir", &fd, &keeper.prefix,
                          &PyDict_Type, &keeper.previous, &PyDict_Type, &keeper.entries,
                          &PySet_Type, &keeper.multi, &keeper.room))
        return NULL;
    return listed(fd, &keeper);
}

static PyMethodDef methods[] = {
    {"stat_dir", stat_dir, METH_O,
     "stat_dir(fd) -> (names, stats, errors): every entry of the directory at fd, lstat'ed."},
    {"scan_dir", scan_dir, METH_VARARGS,
     "scan_dir(fd, prefix, previous, entries, multi, room) -> (names, stats, errors): "
     "stat_dir, keeping unchanged regular files itself."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "acpd_statdir",
    "The checkpoint scanner's directory listing in C (src/acpd/checkpoint/statdir.c).",
    -1, methods,
};

PyMODINIT_FUNC PyInit_acpd_statdir(void) {
    if (attr_fast == NULL) {
        attr_fast = PyUnicode_InternFromString("fast");
        attr_ctime = PyUnicode_InternFromString("ctime_ns");
        attr_mtime = PyUnicode_InternFromString("mtime_ns");
        attr_size = PyUnicode_InternFromString("size");
        attr_ino = PyUnicode_InternFromString("ino");
        attr_dev = PyUnicode_InternFromString("dev");
        if (!attr_fast || !attr_ctime || !attr_mtime || !attr_size || !attr_ino || !attr_dev)
            return NULL;
    }
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
