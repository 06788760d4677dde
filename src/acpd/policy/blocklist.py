"""The unconditional blocklist: no rule, overlay, mode or trust level can lift these.

Constructs (substitutions, here-strings, `$[..]`, `${x@P}`) are found by the parser; this module
holds the names: builtins that change what later words mean, environment variables that inject
code into whatever runs next, and the checks on words (subscript evaluation, /dev/tcp).
"""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache
from typing import Final, Literal

BLOCKED_BUILTINS: dict[str, str] = {
    "source": "source runs a script in this shell (it can redefine every command)",
    ".": ". runs a script in this shell (it can redefine every command)",
    "alias": "alias changes what later command names mean",
    "unalias": "unalias changes what later command names mean",
    "enable": "enable loads or swaps shell builtins",
    "hash": "hash -p remaps command names to other binaries",
    "shopt": "shopt changes how the rest of the line is parsed",
    "fc": "fc re-runs commands from history",
    "bind": "bind -x runs commands from key bindings",
    "complete": "complete -C runs commands",
    "compgen": "compgen -C runs commands",
}

SHELLS: Final = frozenset({
    "sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "yash", "fish", "csh", "tcsh", "rbash",
    "posh", "ksh93", "pdksh", "oksh", "lksh", "elvish", "nu", "xonsh",
})

BLOCKED_ENV: tuple[str, ...] = (
    # the shell itself: what runs, how words split, what runs before every command
    "PATH", "IFS", "CDPATH", "GLOBIGNORE", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS",
    "BASH_FUNC_*", "BASH_LOADABLES_PATH", "BASH_XTRACEFD", "PS0", "PS1", "PS2", "PS3", "PS4",
    "PROMPT_COMMAND", "INPUTRC", "HISTFILE", "FUNCNEST",
    # what a command name runs: bash's command hash table (`BASH_CMDS[ls]=./x` is `hash -p`),
    # its alias table, names PATH search skips (a later, workspace PATH entry wins), the
    # compatibility level (changes how subscripts and words are expanded) and the message
    # catalog `$"..."` strings are translated from (a translation is expanded again)
    "BASH_CMDS", "BASH_ALIASES", "EXECIGNORE", "BASH_COMPAT", "TEXTDOMAIN", "TEXTDOMAINDIR",
    # the dynamic loader and libc: they load code named by these
    "LD_*", "DYLD_*", "GCONV_PATH", "LOCPATH", "NLSPATH", "GLIBC_TUNABLES", "MALLOC_*",
    "HOSTALIASES", "RESOLV_*",
    # config directories: git, bash, cargo, npm... read config (= code) from $HOME and XDG dirs
    "HOME", "XDG_*", "ZDOTDIR", "GNUPGHOME", "GIT_*", "GITHUB_*",
    # programs run by name from the environment
    "*PAGER", "*EDITOR", "*ASKPASS", "BROWSER", "LESS*", "SHELL", "TERMINFO", "TERMINFO_DIRS",
    "DIFFTOOL", "MANOPT", "MANPATH",
    # interpreters and toolchains that load code or options from the environment
    "NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE", "NPM_CONFIG_*", "YARN_*",
    "PNPM_*", "COREPACK_*", "BUN_*", "DENO_*",
    "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONBREAKPOINT",
    "PYTHONWARNINGS", "PYTHONPLATLIBDIR", "PYTHONEXECUTABLE", "PYTHONPYCACHEPREFIX",
    "PYTHONINSPECT", "PYTHONSAFEPATH", "PIP_*", "UV_*", "PYTEST_ADDOPTS", "PYTEST_PLUGINS",
    "VIRTUAL_ENV", "CONDA_*",
    "PERL5*", "PERLLIB", "PERL_*", "PERLDB_OPTS", "RUBYOPT", "RUBYLIB", "RUBY*", "GEM_*",
    "BUNDLE_*", "BUNDLER_*", "PHPRC", "PHP_INI_SCAN_DIR", "LUA_*", "R_*", "TCLLIBPATH",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "MAVEN_*",
    "GRADLE_*", "DOTNET_*", "COMPlus_*",
    "CARGO_HOME", "CARGO_BUILD_*", "CARGO_TARGET_*_RUNNER", "CARGO_TARGET_*_LINKER",
    "CARGO_TARGET_*_RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_ALIAS_*", "CARGO_REGISTR*",
    "CARGO_CREDENTIAL_*", "CARGO_NET_*", "CARGO_HTTP_*", "CARGO_UNSTABLE_*", "CARGO_INSTALL_*",
    "CARGO", "RUSTC", "RUSTC_*", "RUSTDOC", "RUSTDOC*", "RUSTFLAGS", "RUSTUP_*",
    "GOFLAGS", "GOENV", "GOROOT", "GOPATH", "GOTOOLCHAIN", "GOCACHE", "GOMODCACHE", "GOPROXY",
    "GONOPROXY", "GOPRIVATE", "GONOSUMDB", "GONOSUMCHECK", "GOSUMDB", "GOINSECURE", "GOVCS",
    "GOAUTH", "GOWORK", "CGO_*",
    "MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "MAKEFILES", "MAKELEVEL",
    "TAR_OPTIONS", "TAPE", "RIPGREP_CONFIG_PATH", "FZF_DEFAULT_COMMAND", "AWKPATH", "AWKLIBPATH",
    "OPENSSL_CONF", "OPENSSL_ENGINES", "OPENSSL_MODULES", "WGETRC", "CURL_HOME",
    "DOCKER_CONFIG", "GTK_MODULES", "GTK_PATH", "GIO_EXTRA_MODULES", "QT_PLUGIN_PATH",
    "GST_PLUGIN_PATH*", "SSH_*",
    # version managers: hook and plugin directories they source or run (rtfixc, B1c)
    "PYENV", "PYENV_*", "RBENV_*", "NODENV_*", "GOENV_*", "PLENV_*", "PHPENV_*", "JENV_*",
    "ASDF_*", "MISE_*", "RTX_*", "NVM_*", "FNM_*", "N_PREFIX", "VOLTA_*", "SDKMAN_*",
    "RVM_*", "PROTO_*",
    # files a modelled program reads or writes, named by the environment (rtfixc, B9):
    # file's magic database, tar's default archive, old greps' options, zip/unzip options,
    # the backup suffix of cp/mv/ln/install, ncurses' terminal description file
    "MAGIC", "TAPE", "GREP_OPTIONS", "UNZIP", "UNZIPOPT", "ZIPOPT", "ZIPINFO", "ZIPINFOOPT",
    "SIMPLE_BACKUP_SUFFIX", "VERSION_CONTROL", "TERMCAP",
)
"""Assignments to these (a command prefix `VAR=`, standalone, `env VAR=`, `export`, `declare`,
`read`, `printf -v`, `mapfile`, `for VAR in`, arithmetic `(( VAR=1 ))`...) are denied: each
makes bash, the loader, git, an interpreter or a toolchain run code or load config the
command line chose, typically files in the workspace (a `.gitconfig` with `core.fsmonitor`
under `HOME=.`, a `PYTHONPATH=.` module, `RUSTC_WRAPPER=./x`, `GOFLAGS=-toolexec=./x`)."""

ASK_ENV: tuple[str, ...] = (
    "CC", "CXX", "CPP", "LD", "AR", "AS", "NM", "RANLIB", "STRIP", "OBJCOPY", "OBJDUMP",
    "FC", "F77", "HOSTCC", "HOSTCXX", "MAKE", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS",
    "LDLIBS", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
    "PKG_CONFIG*", "CARGO_TARGET_DIR", "CARGO_*", "TMPDIR", "DOCKER_*", "KUBECONFIG",
    "SSL_CERT_*", "SSLKEYLOGFILE", "*_PROXY", "*_proxy", "GZIP", "XZ_OPT", "XZ_DEFAULTS",
    "ZSTD_*", "BZIP2", "BZIP", "LZOP", "LESSKEY", "GROFF_*", "TEXINPUTS", "OLDPWD",
    "POSIXLY_CORRECT",
)
"""Assignments to these ask: they choose a compiler, flags or a location that a build or a
tool uses (`CC=./x make`, `CFLAGS=-fplugin=./x.so`, `CARGO_TARGET_DIR=/elsewhere`), which is
code or a write the rule for that tool did not model; an approver can read them. Builds are
trusted-only already, so in a provisional workspace these commands ask anyway."""

ENV_EXCEPTIONS: tuple[str, ...] = (
    "CARGO_TERM_*", "CARGO_INCREMENTAL", "CARGO_PROFILE_*_OPT_LEVEL", "CARGO_PROFILE_*_DEBUG",
    "PERL_BADLANG", "RUST_LOG", "RUST_BACKTRACE", "R_HOME_NOT_SET", "LESS", "GIT_PAGER",
    "PAGER", "MANPAGER", "SYSTEMD_PAGER",
)
"""Names the tiers above would catch that are safe to set: build output and log switches,
and pagers set to `cat` (a pager is allowed only as `cat`: see `env_verdict`)."""

_PAGER_SAFE: Final = frozenset({"cat", "/bin/cat", "/usr/bin/cat", "", "less -R", "less"})

_SUBSCRIPT_CODE: Final = re.compile(r"\$\(|`|\$\[|[<>]\(")
"""What runs code inside a subscript that bash expands again."""
_DEV_NET: Final = re.compile(r"/dev/(tcp|udp)/")


def _regex(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for a list of name patterns (fnmatch, on upper-cased names)."""
    parts = [fnmatch.translate(pat.upper()) for pat in patterns]
    return re.compile("|".join(f"(?:{p})" for p in parts) or "(?!)")


_DENY: Final = _regex(BLOCKED_ENV)
_ASK: Final = _regex(ASK_ENV)
_EXCEPT: Final = _regex(ENV_EXCEPTIONS)


@lru_cache(maxsize=64)
def _extra_regex(extra: tuple[str, ...]) -> re.Pattern[str]:
    return _regex(extra)


def env_verdict(name: str, extra: tuple[str, ...] = (), value: str | None = None
                ) -> Literal["deny", "ask"] | None:
    """The verdict on assigning `name` (a name pattern of `extra`, the policy's own
    `[blocklist] env`, always denies); None when the name is free to set. A pager variable
    set to `cat` (the value, when known) is free: acpd sets PAGER=cat itself."""
    upper = name.upper()
    if extra and _extra_regex(extra).match(upper):
        return "deny"
    if _EXCEPT.match(upper):
        if upper.endswith("PAGER") and value is not None and value.strip() not in _PAGER_SAFE:
            return "deny"
        if upper == "LESS" and value is not None and any(c in value for c in "!|+#"):
            return "deny"
        return None
    if _DENY.match(upper):
        return "deny"
    if _ASK.match(upper):
        return "ask"
    return None


def env_blocked(name: str, extra: tuple[str, ...] = ()) -> bool:
    """Is assigning `name` denied whatever its value?"""
    upper = name.upper()
    if upper.endswith("PAGER") or upper == "LESS":
        return True
    return env_verdict(name, extra) == "deny"


def _subscript_code(value: str) -> bool:
    """Is there a `[` followed, before the next `]`, by `$(`, a backtick, `$[`, `<(` or `>(`?
    (Linear: one split and one search per piece. A regex `\\[[^\\]]*(...)` backtracks
    quadratically on `a[a[a[...` and took seconds on 40 KB.)"""
    for piece in value.split("]"):
        k = piece.find("[")
        if k >= 0 and _SUBSCRIPT_CODE.search(piece, k):
            return True
    return False


def word_findings(value: str) -> list[tuple[str, str]]:
    """Blocklist hits inside one computed word (quoted or not: bash evaluates subscripts of
    `test -v`, `printf -v`, `declare`, arithmetic... even from single-quoted text)."""
    hits: list[tuple[str, str]] = []
    if "[" in value and _subscript_code(value):
        hits.append(("blocklist.subscript", "substitution hidden in an array subscript"))
    if "/dev/" in value and _DEV_NET.search(value):
        hits.append(("blocklist.dev-tcp", "/dev/tcp or /dev/udp network redirection"))
    return hits
