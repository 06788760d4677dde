;; wasi_files: an example WASI plugin tool for acpd (protocol_version 1).
;; Reads the request from stdin, takes args.path (and args.content, if given) by a plain
;; scan for "path":" and "content":" (no JSON escapes inside them), then either writes
;; `content` to `path` or reads `path` (at most 16 KiB), both relative to the first preopened
;; mount (fd 3). Writes one JSON response line to stdout. Build: wasmtime.wat2wasm(this file).
(module
  (import "wasi_snapshot_preview1" "fd_read"
    (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (memory (export "memory") 2)
  ;; 0..16 iovec, 16..32 counters, 200.. constants, 1024.. stdin, 20000.. file, 40000.. out
  (data (i32.const 200) "{\"ok\":true,\"output\":\"")
  (data (i32.const 240) "\"}\n")
  (data (i32.const 260) "{\"ok\":false,\"error\":\"")
  (data (i32.const 300) "\"path\":\"")
  (data (i32.const 320) "\"content\":\"")
  (data (i32.const 340) "open failed: errno ")
  (data (i32.const 380) "no path in the request")
  (data (i32.const 420) "wrote ")
  (data (i32.const 440) " bytes")
  (data (i32.const 460) "read failed: errno ")
  (data (i32.const 500) "write failed: errno ")
  (global $inlen (mut i32) (i32.const 0))
  (global $outlen (mut i32) (i32.const 0))

  (func $emit (param $p i32) (param $n i32)
    (memory.copy (i32.add (i32.const 40000) (global.get $outlen)) (local.get $p) (local.get $n))
    (global.set $outlen (i32.add (global.get $outlen) (local.get $n))))

  (func $byte (param $b i32)
    (i32.store8 (i32.add (i32.const 40000) (global.get $outlen)) (local.get $b))
    (global.set $outlen (i32.add (global.get $outlen) (i32.const 1))))

  (func $escaped (param $p i32) (param $n i32) (local $i i32) (local $b i32)
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $b (i32.load8_u (i32.add (local.get $p) (local.get $i))))
      (if (i32.or (i32.eq (local.get $b) (i32.const 34)) (i32.eq (local.get $b) (i32.const 92)))
        (then (call $byte (i32.const 92))))
      (if (i32.lt_u (local.get $b) (i32.const 32))
        (then (call $byte (i32.const 32)))
        (else (call $byte (local.get $b))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next))))

  (func $number (param $v i32) (local $d i32)
    (if (i32.ge_u (local.get $v) (i32.const 10))
      (then (call $number (i32.div_u (local.get $v) (i32.const 10)))))
    (call $byte (i32.add (i32.const 48) (i32.rem_u (local.get $v) (i32.const 10)))))

  (func $flush (param $code i32)
    (i32.store (i32.const 0) (i32.const 40000))
    (i32.store (i32.const 4) (global.get $outlen))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16))))

  (func $fail_errno (param $msg i32) (param $n i32) (param $errno i32)
    (call $emit (i32.const 260) (i32.const 21))
    (call $emit (local.get $msg) (local.get $n))
    (call $number (local.get $errno))
    (call $emit (i32.const 240) (i32.const 3)))

  ;; index just past `needle` in the input, or -1
  (func $find (param $needle i32) (param $n i32) (result i32) (local $i i32) (local $j i32)
    (block $none (loop $at
      (br_if $none (i32.gt_u (i32.add (local.get $i) (local.get $n)) (global.get $inlen)))
      (local.set $j (i32.const 0))
      (block $miss (loop $cmp
        (if (i32.eq (local.get $j) (local.get $n))
          (then (return (i32.add (local.get $i) (local.get $n)))))
        (br_if $miss (i32.ne
          (i32.load8_u (i32.add (i32.const 1024) (i32.add (local.get $i) (local.get $j))))
          (i32.load8_u (i32.add (local.get $needle) (local.get $j)))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $cmp)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $at)))
    (i32.const -1))

  ;; length of the string value starting at input offset $s (up to the next quote)
  (func $strlen (param $s i32) (result i32) (local $i i32)
    (block $end (loop $next
      (br_if $end (i32.ge_u (i32.add (local.get $s) (local.get $i)) (global.get $inlen)))
      (br_if $end (i32.eq (i32.load8_u (i32.add (i32.const 1024)
        (i32.add (local.get $s) (local.get $i)))) (i32.const 34)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next)))
    (local.get $i))

  (func $read_stdin (local $got i32)
    (block $eof (loop $more
      (br_if $eof (i32.ge_u (global.get $inlen) (i32.const 16384)))
      (i32.store (i32.const 0) (i32.add (i32.const 1024) (global.get $inlen)))
      (i32.store (i32.const 4) (i32.sub (i32.const 16384) (global.get $inlen)))
      (br_if $eof (i32.ne (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1)
                                         (i32.const 16)) (i32.const 0)))
      (local.set $got (i32.load (i32.const 16)))
      (br_if $eof (i32.eqz (local.get $got)))
      (global.set $inlen (i32.add (global.get $inlen) (local.get $got)))
      (br $more))))

  (func $write_file (param $path i32) (param $plen i32) (param $c i32)
    (local $errno i32) (local $clen i32)
    (local.set $clen (call $strlen (local.get $c)))
    ;; oflags CREAT|TRUNC, rights FD_WRITE
    (local.set $errno (call $path_open (i32.const 3) (i32.const 0)
      (i32.add (i32.const 1024) (local.get $path)) (local.get $plen)
      (i32.const 9) (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 20)))
    (if (local.get $errno) (then
      (call $fail_errno (i32.const 340) (i32.const 19) (local.get $errno)) (return)))
    (i32.store (i32.const 0) (i32.add (i32.const 1024) (local.get $c)))
    (i32.store (i32.const 4) (local.get $clen))
    (local.set $errno (call $fd_write (i32.load (i32.const 20)) (i32.const 0) (i32.const 1)
                                      (i32.const 16)))
    (if (local.get $errno) (then
      (call $fail_errno (i32.const 500) (i32.const 20) (local.get $errno)) (return)))
    (call $emit (i32.const 200) (i32.const 21))
    (call $emit (i32.const 420) (i32.const 6))
    (call $number (i32.load (i32.const 16)))
    (call $emit (i32.const 440) (i32.const 6))
    (call $emit (i32.const 240) (i32.const 3)))

  (func $read_file (param $path i32) (param $plen i32) (local $errno i32)
    (local.set $errno (call $path_open (i32.const 3) (i32.const 0)
      (i32.add (i32.const 1024) (local.get $path)) (local.get $plen)
      (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 20)))
    (if (local.get $errno) (then
      (call $fail_errno (i32.const 340) (i32.const 19) (local.get $errno)) (return)))
    (i32.store (i32.const 0) (i32.const 20000))
    (i32.store (i32.const 4) (i32.const 16384))
    (local.set $errno (call $fd_read (i32.load (i32.const 20)) (i32.const 0) (i32.const 1)
                                     (i32.const 16)))
    (if (local.get $errno) (then
      (call $fail_errno (i32.const 460) (i32.const 19) (local.get $errno)) (return)))
    (call $emit (i32.const 200) (i32.const 21))
    (call $escaped (i32.const 20000) (i32.load (i32.const 16)))
    (call $emit (i32.const 240) (i32.const 3)))

  (func (export "_start") (local $path i32) (local $content i32)
    (call $read_stdin)
    (local.set $path (call $find (i32.const 300) (i32.const 8)))
    (if (i32.lt_s (local.get $path) (i32.const 0)) (then
      (call $emit (i32.const 260) (i32.const 21))
      (call $emit (i32.const 380) (i32.const 22))
      (call $emit (i32.const 240) (i32.const 3))
      (call $flush (i32.const 0))
      (return)))
    (local.set $content (call $find (i32.const 320) (i32.const 11)))
    (if (i32.ge_s (local.get $content) (i32.const 0))
      (then (call $write_file (local.get $path) (call $strlen (local.get $path))
                              (local.get $content)))
      (else (call $read_file (local.get $path) (call $strlen (local.get $path)))))
    (call $flush (i32.const 0)))
)
