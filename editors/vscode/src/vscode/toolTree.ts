// The tool status tree: one node per tool call with its status icon and duration (ticking while
// it runs); clicking a node opens its output, diff or failure reason (toolStatus.detail).

import * as vscode from "vscode";
import { durationMs, formatDuration, isFinal, type ToolNode, type ToolState } from "../core/toolStatus";

const ICONS: Record<string, vscode.ThemeIcon> = {
  pending: new vscode.ThemeIcon("clock"),
  in_progress: new vscode.ThemeIcon("sync~spin"),
  completed: new vscode.ThemeIcon("pass", new vscode.ThemeColor("testing.iconPassed")),
  failed: new vscode.ThemeIcon("error", new vscode.ThemeColor("testing.iconFailed")),
};

export class ToolTree implements vscode.TreeDataProvider<string>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<string | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly state: () => ToolState) {}

  refresh(): void {
    this.changed.fire(undefined);
    const running = Object.values(this.state().nodes).some((n) => !isFinal(n.status));
    if (running && !this.timer) {
      this.timer = setInterval(() => this.refresh(), 500);
    } else if (!running && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  getChildren(element?: string): string[] {
    return element ? [] : [...this.state().order].reverse();
  }

  getTreeItem(id: string): vscode.TreeItem {
    const node: ToolNode | undefined = this.state().nodes[id];
    if (!node) return new vscode.TreeItem(id);
    const item = new vscode.TreeItem(node.title, vscode.TreeItemCollapsibleState.None);
    item.description = `${node.status.replace("_", " ")} · ${formatDuration(durationMs(node, Date.now()))}`;
    item.iconPath = ICONS[node.status];
    item.tooltip = `${node.kind}: ${node.title}`;
    item.command = { command: "acpd.showTool", title: "Show", arguments: [id] };
    return item;
  }

  dispose(): void {
    if (this.timer) clearInterval(this.timer);
    this.changed.dispose();
  }
}
