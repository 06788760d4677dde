// Permission requests as quick picks. What the call would do (the diff or the command) is shown
// in a read-only preview beside the editor first, and its first lines in the pick itself.

import * as vscode from "vscode";
import type { PermissionAsk, PermissionPort } from "../core/ports";

const ICONS: Record<string, string> = {
  allow_once: "$(check)", allow_always: "$(check-all)", reject_once: "$(close)", reject_always: "$(circle-slash)",
};

export class QuickPickPermissions implements PermissionPort {
  private queue: Promise<unknown> = Promise.resolve();

  /** One prompt at a time: a second quick pick would dismiss the first (answering cancelled). */
  choose(ask: PermissionAsk): Promise<string | null> {
    const turn = this.queue.then(() => this.ask(ask));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private async ask(ask: PermissionAsk): Promise<string | null> {
    const preview = await vscode.workspace.openTextDocument({ content: ask.detail, language: "diff" });
    await vscode.window.showTextDocument(preview, { preview: true, viewColumn: vscode.ViewColumn.Beside, preserveFocus: true });
    const summary = ask.detail.split("\n").slice(0, 3).join(" ⏎ ");
    const picked = await vscode.window.showQuickPick(
      ask.options.map((o) => ({ label: `${ICONS[o.kind] ?? ""} ${o.name}`, description: o.kind, detail: summary, optionId: o.optionId })),
      { title: `acpd wants to: ${ask.title}`, placeHolder: summary, ignoreFocusOut: true },
    );
    return picked?.optionId ?? null;
  }
}
