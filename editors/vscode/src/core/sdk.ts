// The ACP SDK is an ES module and this extension is CommonJS (what every VS Code version loads),
// so the SDK comes in through one dynamic import, and its types through `resolution-mode`.
import type * as Acp from "@agentclientprotocol/sdk" with { "resolution-mode": "import" };

export type { Acp };
export type AcpModule = typeof Acp;

let loaded: Promise<AcpModule> | undefined;

export function loadSdk(): Promise<AcpModule> {
  loaded ??= import("@agentclientprotocol/sdk");
  return loaded;
}
