import assert from "node:assert/strict";
import { test } from "node:test";
import type { ExitStatus } from "../core/terminalBuffer";
import { ProcessRunner } from "../core/processRunner";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function run(command: string) {
  const chunks: Buffer[] = [];
  let exited!: (s: ExitStatus) => void;
  const exit = new Promise<ExitStatus>((resolve) => (exited = resolve));
  const running = new ProcessRunner().start(
    { command: "bash", args: ["-c", command], cwd: null, env: { ACPD_T: "x" }, label: command },
    { data: (c) => chunks.push(Buffer.from(c)), exit: exited },
  );
  return { running, exit, output: () => Buffer.concat(chunks).toString("utf8") };
}

async function until(what: () => boolean): Promise<void> {
  const deadline = Date.now() + 20000;
  while (!what()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("output, env and exit status of a real command", async () => {
  const r = run("echo out $ACPD_T; echo err >&2; exit 3");
  assert.deepEqual(await r.exit, { exitCode: 3, signal: null });
  assert.match(r.output(), /out x/);
  assert.match(r.output(), /err/);
});

test("kill ends the command and what it started", async () => {
  const r = run("sleep 300 & echo $!; wait");
  await until(() => /\d+\n/.test(r.output()));
  const child = Number(r.output().trim());
  r.running.kill();
  assert.equal((await r.exit).signal, "SIGKILL");
  await until(() => !alive(child));
});

test("release ends what an exited command left running in its group", async () => {
  const r = run("sleep 300 >/dev/null 2>&1 & echo $!");
  const status = await r.exit;
  assert.equal(status.exitCode, 0);
  const orphan = Number(r.output().trim());
  assert.ok(alive(orphan));
  r.running.kill(); // the command itself has exited: kill is a no-op here
  assert.ok(alive(orphan));
  r.running.release();
  await until(() => !alive(orphan));
});

test("a command that cannot start exits 127 with the reason", async () => {
  const chunks: string[] = [];
  const status = await new Promise<ExitStatus>((resolve) =>
    new ProcessRunner().start(
      { command: "/no/such/program", args: [], cwd: null, env: {}, label: "x" },
      { data: (c) => chunks.push(Buffer.from(c).toString()), exit: resolve },
    ),
  );
  assert.equal(status.exitCode, 127);
  assert.match(chunks.join(""), /no\/such\/program/);
});
