// How the tests start the real acpd: `python -m acpd serve --model scripted:FILE` from the repo's
// .venv (or $ACPD_TEST_PYTHON), in a temp home that cannot see the developer's own config.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { AcpdClient } from "../core/client";
import type { FsPort, PermissionAsk, PermissionPort, TerminalPort } from "../core/ports";

export const REPO = resolve(__dirname, "..", "..", "..", "..");
const PYTHON = process.env["ACPD_TEST_PYTHON"] ?? join(REPO, ".venv", "bin", "python");

export interface Setup {
  home: string;
  workspace: string;
}

const made: string[] = [];
process.on("exit", () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

export function tempSetup(): Setup {
  const home = mkdtempSync(join(tmpdir(), "acpd-vscode-"));
  made.push(home);
  const workspace = join(home, "ws");
  mkdirSync(workspace);
  return { home, workspace };
}

export function scriptedClient(
  setup: Setup,
  turns: unknown[],
  ports: { fs: FsPort; terminals: TerminalPort; permissions: PermissionPort },
): AcpdClient {
  const script = join(setup.home, "script.json");
  writeFileSync(script, JSON.stringify({ turns }));
  return new AcpdClient({
    command: PYTHON,
    args: ["-m", "acpd", "serve", "--data-dir", join(setup.home, "data"), "--model", `scripted:${script}`],
    cwd: setup.workspace,
    env: {
      ACPD_CONFIG: join(setup.home, "no-config.toml"),
      XDG_CONFIG_HOME: join(setup.home, "config"),
      XDG_DATA_HOME: join(setup.home, "share"),
      PYTHONPATH: REPO,
    },
    ...ports,
  });
}

/** Answers every prompt with the first option of the wanted kind, recording what it was shown. */
export class RecordingPermissions implements PermissionPort {
  asks: PermissionAsk[] = [];
  constructor(private readonly answers: string[]) {}
  async choose(ask: PermissionAsk): Promise<string | null> {
    this.asks.push(ask);
    const kind = this.answers.shift() ?? "reject_once";
    return ask.options.find((o) => o.kind === kind)?.optionId ?? null;
  }
}
