// Terminal bookkeeping for ACP `terminal/*`, no VS Code: the output a terminal has kept, its
// exit status, and its release.
//
// Rules (ACP terminal/create): with `outputByteLimit`, only the LAST `limit` bytes are kept,
// cut at a UTF-8 character boundary (the kept text never starts with a continuation byte, so
// it may be a few bytes under the limit) and `truncated` says that bytes were dropped. Output
// and exit are readable until release; after release every call fails as unknown.

export interface ExitStatus {
  exitCode: number | null;
  signal: string | null;
}

export class TerminalBuffer {
  private data: Buffer = Buffer.alloc(0);
  private truncatedFlag = false;
  private exitStatus: ExitStatus | null = null;
  private waiters: Array<(status: ExitStatus) => void> = [];
  released = false;

  constructor(readonly limit: number | null) {
    if (limit !== null && (!Number.isInteger(limit) || limit < 0)) {
      throw new RangeError(`outputByteLimit must be a non-negative integer, not ${limit}`);
    }
  }

  append(chunk: Uint8Array): void {
    if (this.released) return;
    this.data = Buffer.concat([this.data, chunk]);
    if (this.limit === null) return;
    let start = 0;
    if (this.data.length > this.limit) {
      start = this.data.length - this.limit;
      this.truncatedFlag = true;
    } else if (!this.truncatedFlag) {
      return;
    }
    // Once cut, leading continuation bytes are the rest of a dropped character, including
    // ones that arrive in a later chunk after the cut emptied the buffer.
    while (start < this.data.length && (this.data[start]! & 0xc0) === 0x80) start++;
    this.data = this.data.subarray(start);
  }

  /** The kept output as text. While the command runs, a character whose last bytes have not
   * arrived yet is left out (it would read as U+FFFD and break the byte limit). */
  get output(): string {
    const end = this.exitStatus === null ? completeLength(this.data) : this.data.length;
    return this.data.subarray(0, end).toString("utf8");
  }

  get truncated(): boolean {
    return this.truncatedFlag;
  }

  get exit(): ExitStatus | null {
    return this.exitStatus;
  }

  finish(status: ExitStatus): void {
    if (this.exitStatus !== null) return;
    this.exitStatus = status;
    for (const wake of this.waiters.splice(0)) wake(status);
  }

  waitForExit(): Promise<ExitStatus> {
    if (this.exitStatus !== null) return Promise.resolve(this.exitStatus);
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

/** The length of `data` without a trailing UTF-8 sequence that is still incomplete. */
function completeLength(data: Buffer): number {
  for (let back = 1; back <= Math.min(4, data.length); back++) {
    const byte = data[data.length - back]!;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return need > back ? data.length - back : data.length;
  }
  return data.length;
}
