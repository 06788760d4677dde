// fs/* through VS Code's documents: a read answers an open document's text (unsaved edits
// count), else the file on disk; a write is a WorkspaceEdit (replacing an open document's whole
// text, or creating/overwriting the file) followed by a save, so disk and editor agree.

import * as vscode from "vscode";
import type { FsPort } from "../core/ports";

function openDocument(path: string): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === path);
}

export class DocumentFs implements FsPort {
  async readText(path: string): Promise<string> {
    const doc = openDocument(path);
    if (doc) return doc.getText();
    const bytes = await vscode.workspace.fs.readFile(vscode.Uri.file(path));
    return new TextDecoder("utf-8").decode(bytes);
  }

  async writeText(path: string, content: string): Promise<void> {
    const uri = vscode.Uri.file(path);
    const edit = new vscode.WorkspaceEdit();
    const doc = openDocument(path);
    if (doc) {
      const whole = new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length));
      edit.replace(uri, whole, content);
    } else {
      edit.createFile(uri, { overwrite: true, contents: new TextEncoder().encode(content) });
    }
    if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`VS Code refused the edit of ${path}`);
    const after = openDocument(path);
    if (after?.isDirty && !(await after.save())) throw new Error(`could not save ${path}`);
  }
}
