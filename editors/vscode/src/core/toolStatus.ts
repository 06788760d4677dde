// The tool status model: a pure reducer from ACP `session/update` notifications to one node per
// tool call, with status and duration. No VS Code; the tree view renders what this returns.
//
// Rules: a call's clock starts when it is first seen (`tool_call`, or an update for an unknown
// id: a replay can begin mid-call) and stops at the first terminal status (completed, failed);
// later updates change the text but never restart the clock. Content replaces content (ACP
// sends the whole list each time). Unknown update kinds leave the state untouched.

export type ToolStatus = "pending" | "in_progress" | "completed" | "failed";

export interface DiffItem {
  path: string;
  oldText: string | null;
  newText: string;
}

export interface ToolNode {
  id: string;
  title: string;
  kind: string;
  status: ToolStatus;
  startedAt: number;
  endedAt: number | null;
  text: string;
  diffs: DiffItem[];
  terminalIds: string[];
}

export interface ToolState {
  order: string[];
  nodes: Record<string, ToolNode>;
}

export const emptyToolState: ToolState = { order: [], nodes: {} };

const STATUSES: readonly string[] = ["pending", "in_progress", "completed", "failed"];

type Update = { sessionUpdate?: unknown; [key: string]: unknown };

export function reduceToolState(state: ToolState, update: Update, now: number): ToolState {
  const kind = update.sessionUpdate;
  if (kind !== "tool_call" && kind !== "tool_call_update") return state;
  const id = update["toolCallId"];
  if (typeof id !== "string") return state;
  const before = state.nodes[id];
  const node: ToolNode = before
    ? { ...before }
    : {
        id, title: id, kind: "other", status: "pending", startedAt: now, endedAt: null,
        text: "", diffs: [], terminalIds: [],
      };
  if (typeof update["title"] === "string") node.title = update["title"];
  if (typeof update["kind"] === "string") node.kind = update["kind"];
  const status = update["status"];
  if (typeof status === "string" && STATUSES.includes(status)) {
    node.status = status as ToolStatus;
    if (isFinal(node.status) && node.endedAt === null) node.endedAt = now;
  }
  if (Array.isArray(update["content"])) Object.assign(node, readContent(update["content"]));
  const order = before ? state.order : [...state.order, id];
  return { order, nodes: { ...state.nodes, [id]: node } };
}

export function isFinal(status: ToolStatus): boolean {
  return status === "completed" || status === "failed";
}

/** Milliseconds the call has run: to its end, or to `now` while it runs. */
export function durationMs(node: ToolNode, now: number): number {
  return Math.max(0, (node.endedAt ?? now) - node.startedAt);
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

const ICONS: Record<ToolStatus, string> = {
  pending: "…", in_progress: "▶", completed: "✓", failed: "✗",
};

/** One line for a tree node or a status bar: icon, title, duration. */
export function label(node: ToolNode, now: number): string {
  return `${ICONS[node.status]} ${node.title} (${formatDuration(durationMs(node, now))})`;
}

/** What a click shows: the failure reason, else the diffs, else the output text. */
export function detail(node: ToolNode): string {
  const parts: string[] = [`${node.title}\nstatus: ${node.status}`];
  if (node.status === "failed") parts.push(`reason:\n${node.text || "(no reason given)"}`);
  for (const diff of node.diffs) parts.push(unifiedDiff(diff));
  if (node.status !== "failed" && node.text) parts.push(node.text);
  return parts.join("\n\n");
}

export function unifiedDiff(diff: DiffItem): string {
  const old = diff.oldText === null ? [] : diff.oldText.split("\n");
  const lines = [`--- ${diff.oldText === null ? "/dev/null" : diff.path}`, `+++ ${diff.path}`];
  for (const line of old) lines.push(`-${line}`);
  for (const line of diff.newText.split("\n")) lines.push(`+${line}`);
  return lines.join("\n");
}

function readContent(items: unknown[]): Pick<ToolNode, "text" | "diffs" | "terminalIds"> {
  const texts: string[] = [];
  const diffs: DiffItem[] = [];
  const terminalIds: string[] = [];
  for (const item of items) {
    if (typeof item !== "object" || item === null) continue;
    const it = item as Record<string, unknown>;
    if (it["type"] === "content") {
      const block = it["content"] as Record<string, unknown> | undefined;
      if (block && block["type"] === "text" && typeof block["text"] === "string") {
        texts.push(block["text"]);
      }
    } else if (it["type"] === "diff" && typeof it["path"] === "string") {
      const oldText = typeof it["oldText"] === "string" ? it["oldText"] : null;
      diffs.push({ path: it["path"], oldText, newText: String(it["newText"] ?? "") });
    } else if (it["type"] === "terminal" && typeof it["terminalId"] === "string") {
      terminalIds.push(it["terminalId"]);
    }
  }
  return { text: texts.join("\n"), diffs, terminalIds };
}
