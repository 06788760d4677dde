"""Blocked environment names kept from commands run in the editor's terminal.

A local command gets the daemon's environment minus `[tools.shell] env_blocklist`
(local.py `child_env`). A command in the editor's terminal gets the *editor's* environment,
which holds whatever the user's login shell exported when the editor started
(`OPENAI_API_KEY`, `GITHUB_TOKEN`, ...), and `terminal/create` can only add variables, not
remove them. So the `bash -c` script the editor runs starts with a prologue that unsets every
exported name the blocklist matches (case-insensitively, as `child_env` does), then runs the
command unchanged with `eval`: it is parsed only after the prologue, with the shell options
the prologue borrowed restored.

Names that are not shell identifiers (`A-B_TOKEN`) cannot be unset by bash, which still
passes them to its children; when there are any, the script runs itself again through
`env -u NAME`. The names come from /proc/self/environ on Linux (`compgen -e` elsewhere,
which sees identifiers only). Costs about half a millisecond per command.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

_HEAD = "shopt -s nocasematch\n__acpd_x=()\n"
_NAMES = """if [ -r /proc/self/environ ]; then
mapfile -d '' __acpd_e </proc/self/environ
else
__acpd_e=($(compgen -e))
fi
"""
_LOOP = """for __acpd_n in "${{__acpd_e[@]%%=*}}"; do
case $__acpd_n in
{keep}{blocked}) if [[ $__acpd_n =~ ^[a-z_][a-z0-9_]*$ ]]; then unset -v "$__acpd_n"
else __acpd_x+=(-u "$__acpd_n"); fi ;;
esac
done
shopt -u nocasematch
if [ "${{#__acpd_x[@]}}" -gt 0 ]; then
exec env "${{__acpd_x[@]}}" bash -c "$BASH_EXECUTION_STRING" "$0"
exit 125
fi
unset -v __acpd_e __acpd_n __acpd_x
"""
MARK = "eval -- "
"""The prologue's last line runs the command: `eval -- 'COMMAND'`."""


def wrap(command: str, blocklist: Sequence[str], keep: Iterable[str] = ()) -> str:
    """The `bash -c` script that runs `command` without the blocked names (the command
    itself when nothing is blocked). `blocklist` holds config-validated names or globs
    (letters, digits, `_ * ? [ ] ! -`), which mean the same in a `case` pattern as in
    fnmatch; names in `keep` (what the runner itself sets) are left alone."""
    if not blocklist:
        return command
    kept = "|".join(quote(name) for name in keep)
    loop = _LOOP.format(keep=f"{kept}) ;;\n" if kept else "", blocked="|".join(blocklist))
    return _HEAD + _NAMES + loop + MARK + quote(command)


def original(script: str) -> str:
    """The command a `wrap`ped script runs (what the user should see); `script` itself when
    it is not one."""
    if not script.startswith(_HEAD):
        return script
    at = script.find("\n" + MARK)
    if at < 0:
        return script
    quoted = script[at + 1 + len(MARK):]
    if len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'":
        return script
    return quoted[1:-1].replace("'\\''", "'")


def quote(text: str) -> str:
    """`text` as one single-quoted shell word."""
    return "'" + text.replace("'", "'\\''") + "'"
