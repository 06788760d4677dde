// The chat view: a small webview with the conversation (agent text streamed, thoughts folded)
// and a prompt box. Messages are plain text: the webview never renders agent HTML.

import * as vscode from "vscode";

export type ChatEntry = { role: "user" | "agent" | "thought" | "info"; text: string };

export class ChatView implements vscode.WebviewViewProvider {
  private view: vscode.WebviewView | undefined;
  private readonly entries: ChatEntry[] = [];

  constructor(private readonly onPrompt: (text: string) => void) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    view.webview.options = { enableScripts: true };
    view.webview.html = HTML;
    view.webview.onDidReceiveMessage((msg: { prompt?: unknown; ready?: unknown }) => {
      if (typeof msg.prompt === "string" && msg.prompt.trim()) this.onPrompt(msg.prompt);
      if (msg.ready) void view.webview.postMessage({ entries: this.entries });
    });
  }

  /** Appends text; consecutive pieces of the same role join one entry (streaming). */
  append(role: ChatEntry["role"], text: string): void {
    const last = this.entries.at(-1);
    if (last && last.role === role && role !== "user" && role !== "info") last.text += text;
    else this.entries.push({ role, text });
    void this.view?.webview.postMessage({ entries: this.entries });
  }
}

const HTML = `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline';">
<style>
body{font-family:var(--vscode-font-family);padding:4px}
.e{white-space:pre-wrap;margin:4px 0;padding:4px;border-radius:4px}
.user{background:var(--vscode-input-background)} .info{opacity:.7;font-style:italic}
details{opacity:.7} textarea{width:100%;box-sizing:border-box}
</style></head><body><div id="log"></div>
<textarea id="p" rows="3" placeholder="Ask acpd (Ctrl+Enter to send)"></textarea>
<script>
const vscode = acquireVsCodeApi();
const log = document.getElementById("log"), p = document.getElementById("p");
p.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { vscode.postMessage({prompt: p.value}); p.value = ""; }
});
window.addEventListener("message", (e) => {
  log.replaceChildren(...e.data.entries.map((x) => {
    if (x.role === "thought") {
      const d = document.createElement("details"), s = document.createElement("summary");
      s.textContent = "thinking"; d.append(s, x.text); return d;
    }
    const div = document.createElement("div"); div.className = "e " + x.role; div.textContent = x.text; return div;
  }));
  window.scrollTo(0, document.body.scrollHeight);
});
vscode.postMessage({ready: true});
</script></body></html>`;
