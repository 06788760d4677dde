"""`os.path.join`, `dirname` and `basename` for `str` paths, as posixpath computes them.

posixpath's functions are interpreted Python (with `os.fspath` and separator look-ups on
every call); the judge calls them on every path of every decision. These give the very same
strings (tests/policy/test_pathtext.py checks them against posixpath) and are compiled with
the judge (_native.py)."""

from __future__ import annotations


def join(a: str, *rest: str) -> str:
    path = a
    for b in rest:
        if b.startswith("/"):
            path = b
        elif not path or path.endswith("/"):
            path += b
        else:
            path += "/" + b
    return path


def dirname(p: str) -> str:
    i = p.rfind("/") + 1
    head = p[:i]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head


def basename(p: str) -> str:
    return p[p.rfind("/") + 1 :]
