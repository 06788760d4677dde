"""Option tables of the read tools, file tools and shell builtins the default policy allows.

GNU coreutils, grep, ripgrep, diffutils, findutils' friends, jq, tree, file and the bash
builtins, from their manuals. Value roles are explained in `spec.py`.
"""

from __future__ import annotations

import re
from typing import Final

from acpd.policy.programs.spec import Model, Parsed, Program, program

LIST: Final = "list"
_JQ_LOADS: Final = re.compile(r"\b(import|include)\b|\$__prog|\binput_filename\b")
_HELP: Final = " help version"

TABLE: dict[str, Program] = {}


def add(prog: Program, *aliases: str) -> None:
    TABLE[prog.name] = prog
    for alias in aliases:
        TABLE[alias] = Program(alias, prog.shorts, prog.longs, prog.positionals, prog.check,
                               prog.numeric, prog.permute, prog.abbrev, prog.raw,
                               prog.single_dash_long)


add(program(
    "ls", "aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1I:T:w:",
    "all almost-all author escape block-size= ignore-backups color[=] colour[=] "
    "directory dired classify[=] file-type format= full-time group-directories-first "
    "no-group human-readable si dereference-command-line "
    "dereference-command-line-symlink-to-dir -I/hide= hyperlink[=] indicator-style= "
    "inode ignore= kibibytes dereference literal numeric-uid-gid hide-control-chars "
    "show-control-chars quote-name quoting-style= reverse recursive size sort= time= "
    "time-style= tabsize= width= context zero" + _HELP))
add(program("cat", "AbeEnstTuv", "show-all number-nonblank number squeeze-blank show-ends "
            "show-tabs show-nonprinting" + _HELP))
add(program("head", "c:n:qvz", "bytes= lines= quiet silent verbose zero-terminated" + _HELP,
            numeric=True))
add(program("tail", "c:fFn:qs:vz", "bytes= follow[=] lines= max-unchanged-stats= pid= quiet "
            "silent retry sleep-interval= verbose zero-terminated" + _HELP, numeric=True))
_GREP_LONG: Final = (
    "extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case "
    "no-ignore-case word-regexp line-regexp null-data no-messages invert-match max-count= "
    "byte-offset line-number no-line-number line-buffered with-filename no-filename label= "
    "only-matching quiet silent binary-files= text directories= devices= recursive "
    "dereference-recursive include= exclude= exclude-from= exclude-dir= files-without-match "
    "files-with-matches count initial-tab null context= before-context= after-context= "
    "color[=] colour[=] binary" + _HELP)
_GREP_ROLES: Final = {"-e/--regexp": "pattern", "-f/--file": "read,pattern",
                      "--exclude-from": "read", "-r/-R/--recursive/--dereference-recursive":
                      "recursive"}
add(program("grep", "EFGPiyvwxcLloqsbHhnTZzraIUVe:f:m:A:B:C:D:d:R", _GREP_LONG, _GREP_ROLES,
            positionals="pattern-read", numeric=True), "egrep", "fgrep")
add(program(
    "rg", "iIsSvwxFnNlcoqHLuaUPpz0bhVe:f:g:t:T:j:m:A:B:C:M:r:E:d:",
    "regexp= file= glob= iglob= type= type-not= type-add= type-clear= threads= max-count= "
    "after-context= before-context= context= max-columns= max-depth= maxdepth= "
    "max-filesize= replace= encoding= sort= sortr= path-separator= context-separator= "
    "field-match-separator= field-context-separator= color= colors= engine= "
    "dfa-size-limit= regex-size-limit= ignore-file= pre= pre-glob= hostname-bin= "
    "hyperlink-format= ignore-case smart-case case-sensitive invert-match word-regexp "
    "line-regexp fixed-strings no-fixed-strings line-number no-line-number "
    "files-with-matches files-without-match count count-matches only-matching quiet "
    "with-filename no-filename no-heading heading hidden no-hidden no-ignore "
    "no-ignore-vcs no-ignore-dot no-ignore-global no-ignore-parent no-ignore-exclude "
    "no-ignore-files no-ignore-messages no-require-git follow no-follow json vimgrep files "
    "type-list multiline multiline-dotall pcre2 no-pcre2 no-messages null null-data "
    "one-file-system sort-files stats trim column no-column byte-offset text binary "
    "search-zip no-search-zip crlf no-config passthru passthrough unrestricted debug "
    "trace no-unicode include-zero max-columns-preview pretty vimgrep block-buffered "
    "line-buffered no-block-buffered no-line-buffered auto-hybrid-regex "
    "ignore-file-case-insensitive invert-match glob-case-insensitive no-mmap mmap "
    "pcre2-version generate=" + _HELP,
    {"-e/--regexp": "pattern", "-f/--file": "read,pattern", "--ignore-file": "read",
     "-u/--unrestricted/--hidden/--no-ignore/--no-ignore-vcs/--no-ignore-dot/"
     "--no-ignore-files/--no-ignore-parent": "hidden",
     "--pre": "deny:runs a command on every file",
     "--hostname-bin": "deny:runs a program",
     "-z/--search-zip": "ask:runs decompression programs on files",
     "--files": "pattern"},
    positionals="pattern-read"))
add(program("wc", "cmlLw", "bytes chars lines max-line-length words total= files0-from="
            + _HELP, {"--files0-from": LIST}))
add(program(
    "sort", "bcdfghiMmnRrsuVzk:t:S:T:o:",
    "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort "
    "ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort "
    "random-source= reverse sort= version-sort batch-size= check[=] compress-program= "
    "debug files0-from= key= merge output= stable buffer-size= field-separator= "
    "temporary-directory= parallel= unique zero-terminated" + _HELP,
    {"-o/--output": "write", "-T/--temporary-directory": "wdir", "--random-source": "read",
     "--files0-from": LIST, "--compress-program": "deny:runs a program"}))
add(program("uniq", "cdDf:is:uzw:", "count repeated all-repeated[=] skip-fields= ignore-case "
            "skip-chars= unique zero-terminated check-chars= group[=]" + _HELP,
            positionals="in-out"))
def _diff(prog: Program, parsed: Parsed, m: Model) -> None:
    """diff reads the entries of a directory operand even without -r (`diff -N . empty`
    prints every file of `.`), and `diff DIR FILE` compares DIR/FILE's base name: every
    operand (and --from-file/--to-file value) is a tree (the scan looks only at directories,
    on disk) and DIR/basename(other) a read."""
    pos = [p for p in parsed.positionals if p != "-"]
    sides = pos + parsed.values("--from-file", "--to-file")
    m.reads.extend(pos)
    m.trees.extend(sides)
    for a in sides:
        for b in sides:
            if a != b and b.rstrip("/") and not a.startswith("/dev/"):
                m.reads.append(a.rstrip("/") + "/" + b.rstrip("/").rpartition("/")[2])


add(program(
    "diff", "abBdEiNpqrstTuwyclC:U:W:x:X:S:D:F:I:L:",
    "normal brief report-identical-files context[=] unified[=] ed rcs side-by-side width= "
    "left-column suppress-common-lines show-c-function show-function-line= label= "
    "expand-tabs initial-tab tabsize= suppress-blank-empty paginate recursive "
    "no-dereference new-file unidirectional-new-file ignore-file-name-case "
    "no-ignore-file-name-case exclude= exclude-from= starting-file= from-file= to-file= "
    "ignore-case ignore-tab-expansion ignore-trailing-space ignore-space-change "
    "ignore-all-space ignore-blank-lines ignore-matching-lines= text strip-trailing-cr "
    "ifdef= old-group-format= new-group-format= unchanged-group-format= "
    "changed-group-format= line-format= old-line-format= new-line-format= "
    "unchanged-line-format= minimal horizon-lines= speed-large-files color[=] palette= "
    "no-ignore-file-name-case" + _HELP,
    {"-X/--exclude-from": "read", "--from-file/--to-file": "read",
     "-r/--recursive": "recursive", "-l/--paginate": "ask:runs pr as a pager"},
    positionals="custom", check=_diff))
def _jq(prog: Program, parsed: Parsed, m: Model) -> None:
    pos = list(parsed.positionals)
    if not parsed.role("pattern"):
        if not pos:
            m.ask_unknown("no filter")
            return
        program_text = pos.pop(0)
        if _JQ_LOADS.search(program_text):
            m.ask_unknown("the filter loads modules")
    # jq reads a positional as an input file until it meets --args/--jsonargs; the ones after
    # are strings. Their order among the options is not kept by the parse, so every
    # positional is judged as a read: a string that names no file reads nothing.
    m.reads.extend(p for p in pos if p != "-")


add(program(
    "jq", "nrjascCMSeRhVL:f:",
    "null-input raw-input slurp compact-output tab indent= color-output monochrome-output "
    "ascii-output unbuffered sort-keys raw-output raw-output0 join-output exit-status seq "
    "stream stream-errors from-file= arg== argjson== slurpfile== rawfile== args jsonargs "
    "-L/library-path= "
    "build-configuration" + _HELP,
    {"-f/--from-file": "read,pattern", "--slurpfile/--rawfile": "read2",
     "-L/--library-path": "ask:loads jq modules from a directory"},
    positionals="custom", check=_jq))
add(program(
    "du", "0abcDhHklLmPsSxB:d:t:X:",
    "null all apparent-size block-size= bytes total dereference-args max-depth= "
    "human-readable inodes kibibytes count-links dereference no-dereference megabytes "
    "separate-dirs si summarize threshold= time[=] time-style= exclude-from= exclude= "
    "one-file-system files0-from=" + _HELP,
    {"-X/--exclude-from": "read", "--files0-from": LIST}))
add(program(
    "tree", "adlfxRpugshDFqNQvtcrUCASnJXiL:P:I:H:T:o:",
    "gitignore ignore-case matchdirs metafirst prune info noreport charset= filelimit= "
    "dirsfirst filesfirst si du timefmt= nolinks fromfile hyperlink" + _HELP,
    {"-o": "write", "--fromfile": LIST,
     # -R runs tree again in every directory it lists with `-o 00Tree.html` (.git too)
     "-R": "ask:writes 00Tree.html into every directory it lists, .git included"},
    abbrev=False))
add(program(
    "file", "bcEhiklLNnprsSvzZ0e:F:f:m:P:C",
    "brief mime mime-type mime-encoding keep-going dereference no-dereference extension "
    "apple uncompress uncompress-noreport raw special-files separator= files-from= "
    "magic-file= exclude= exclude-quiet= print0 no-pad no-buffer preserve-date "
    "parameter= compile" + _HELP,
    {"-f/--files-from": LIST, "-m/--magic-file": "read",
     "-C/--compile": "ask:writes a compiled magic file", "-z/--uncompress": "ask:runs "
     "decompression programs", "--uncompress-noreport": "ask:runs decompression programs"}))
add(program("stat", "LftZc:", "dereference file-system terse format= printf= cached="
            + _HELP))
add(program("cut", "nszb:c:f:d:", "bytes= characters= fields= delimiter= complement "
            "only-delimited output-delimiter= zero-terminated" + _HELP))
add(program("tr", "cCdst", "complement delete squeeze-repeats truncate-set1" + _HELP,
            positionals="text"))
add(program("nl", "pb:d:f:h:i:l:n:s:v:w:", "body-numbering= section-delimiter= "
            "footer-numbering= header-numbering= line-increment= join-blank-lines= "
            "number-format= no-renumber number-separator= starting-line-number= "
            "number-width=" + _HELP))
add(program("cmp", "blsi:n:", "print-bytes ignore-initial= verbose bytes= quiet silent"
            + _HELP))
add(program("comm", "123z", "check-order nocheck-order output-delimiter= total "
            "zero-terminated" + _HELP))
add(program("basename", "azs:", "multiple suffix= zero" + _HELP, positionals="text"))
add(program("dirname", "z", "zero" + _HELP, positionals="text"))
add(program("realpath", "emLPqsz", "canonicalize-existing canonicalize-missing logical "
            "physical quiet strip no-symlinks relative-to= relative-base= zero" + _HELP,
            positionals="text"))
add(program("readlink", "femnqsvz", "canonicalize canonicalize-existing canonicalize-missing "
            "no-newline quiet silent verbose zero" + _HELP))
_SUM: Final = program("md5sum", "bctwz", "binary check tag text ignore-missing quiet status strict "
                      "warn zero" + _HELP, {"-c/--check": "ask:reads the files its list names"})
add(_SUM, "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum")
add(program("tac", "brs:", "before regex separator=" + _HELP))
add(program(
    "column", "tnxeJLRETWHdLs:o:c:N:r:l:i:p:O:R:T:E:W:H:",
    "table fillrows table-noextreme table-noheadings table-wrap table-right table-truncate "
    "table-hide table-order table-columns= table-name= tree= tree-id= tree-parent= "
    "separator= output-separator= output-width= json keep-empty-lines use-spaces= "
    "table-column= table-columns-limit= table-header-repeat table-maxout table-noextreme="
    + _HELP))

# ---- file tools ------------------------------------------------------------------------------

add(program("mkdir", "pvm:Z", "mode= parents verbose context[=]" + _HELP, positionals="write"))
add(program("touch", "acfhmd:r:t:", "date= reference= time= no-create no-dereference"
            + _HELP, {"-r/--reference": "read"}, positionals="write"))
add(program("rmdir", "pv", "ignore-fail-on-non-empty parents verbose" + _HELP,
            positionals="delete"))
_CP_LONG: Final = (
    "archive attributes-only backup[=] copy-contents debug force interactive link "
    "dereference no-clobber no-dereference preserve[=] no-preserve= parents recursive "
    "reflink[=] remove-destination sparse= strip-trailing-slashes symbolic-link suffix= "
    "target-directory= no-target-directory update[=] verbose keep-directory-symlink "
    "one-file-system context[=]" + _HELP)
add(program("cp", "abdfHilLnPpRrsTuvxZS:t:", _CP_LONG,
            {"-t/--target-directory": "wdir", "-r/-R/-a/--recursive/--archive": "recursive",
             "-l/-s/--link/--symbolic-link": "link",
             "--parents": "ask:copies into directories named after its sources"},
            positionals="copy"))
add(program("mv", "bfinuvTZS:t:", "backup[=] force interactive no-clobber no-copy "
            "strip-trailing-slashes suffix= target-directory= no-target-directory update[=] "
            "verbose exchange context" + _HELP, {"-t/--target-directory": "wdir"},
            positionals="move"))
add(program("ln", "bdFfiLnPrsTvS:t:", "backup[=] directory force interactive logical "
            "no-dereference physical relative symbolic suffix= target-directory= "
            "no-target-directory verbose" + _HELP,
            {"-t/--target-directory": "wdir", "-d/-F/--directory": "ask:hard links a "
             "directory"}, positionals="link"))
add(program("rm", "dfiIrRv", "force interactive[=] one-file-system no-preserve-root "
            "preserve-root[=] recursive dir verbose" + _HELP,
            {"-r/-R/--recursive": "recursive",
             "--no-preserve-root": "deny:removes / when asked to"}, positionals="delete"),
    "unlink")

# ---- shell builtins and small programs -------------------------------------------------------

add(program("echo", raw=True, positionals="text"))
add(program("printf", "v:", positionals="text", permute=False, abbrev=False))
add(program("pwd", "LP", positionals="none", abbrev=False))
add(program("which", "as", "all skip-alias skip-functions read-alias read-functions "
            "show-dot show-tilde tty-only" + _HELP, positionals="text"))
add(program("uname", "asnrvmpio", "all kernel-name nodename kernel-release kernel-version "
            "machine processor hardware-platform operating-system" + _HELP,
            positionals="none"))
for _name in ("true", "false", ":", "exit", "return", "break", "continue", "shift", "sleep"):
    add(program(_name, raw=True, positionals="text"))
for _name in ("test", "[", "[["):
    add(program(_name, raw=True, positionals="text"))
add(program("cd", "LPe@", permute=False, abbrev=False))
add(program("pushd", "n", permute=False, abbrev=False))
add(program("type", "afptP", positionals="text", permute=False, abbrev=False))
add(program("read", "ersa:d:i:n:N:p:t:u:", positionals="text", permute=False, abbrev=False))
for _name in ("export", "declare", "local", "readonly", "typeset"):
    add(program(_name, "aAfFgiIlnprtuxp", positionals="text", permute=False, abbrev=False))
add(program("unset", "fvn", positionals="text", permute=False, abbrev=False))
add(program("wait", "fnp:", positionals="text", permute=False, abbrev=False))
add(program("jobs", "lnprsx", "", {"-x": "code"}, positionals="text",
            permute=False, abbrev=False))
add(program("whoami", "", _HELP, positionals="none"))
add(program("time", "p", positionals="none", permute=False, abbrev=False))
add(program("disown", "arh", positionals="text", permute=False, abbrev=False))
add(program("env", "0iu:C:S:vP:", "null ignore-environment unset= chdir= split-string= "
            "debug ignore-signal[=] default-signal[=] block-signal[=] list-signal-handling"
            + _HELP, positionals="none"))
