/**
 * Starting the sidecar for the editor: spawn through the TypeScript client, register
 * the editor's answers to server requests *before* `initialize` (so the `fs`
 * capabilities are advertised truthfully), then handshake.
 */
import {
  ThreadlineClient,
  type CancellationToken,
  type ChildProcessTerminals,
  type CreateElicitationParams,
  type CreateElicitationResult,
  type RequestPermissionParams,
  type RequestPermissionResult,
  type ToolCallCall,
  type ToolCallCallResult,
} from "@threadline/client";
import { readTextFile, writeTextFile, type DocumentSource, type DocumentWriter } from "./fileAccess";

export interface SidecarConfig {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  log: (line: string) => void;
  clientInfo: { name: string; version: string };
}

export interface SidecarHandlers {
  permission(params: RequestPermissionParams, token: CancellationToken): Promise<RequestPermissionResult>;
  toolCall(params: ToolCallCall, token: CancellationToken): Promise<ToolCallCallResult>;
  documents: DocumentSource & DocumentWriter;
  /** Run the sidecar's commands here (ACP `terminal/*`, advertised as `terminal: true`). */
  terminals?: ChildProcessTerminals;
  /** Answer the agent's questions (`elicitation/create`); advertised only when given. */
  elicitation?(params: CreateElicitationParams, token: CancellationToken): Promise<CreateElicitationResult>;
}

export async function startSidecar(config: SidecarConfig, handlers: SidecarHandlers): Promise<ThreadlineClient> {
  const client = ThreadlineClient.spawn({
    command: config.command,
    args: config.args,
    env: config.env,
    cwd: config.cwd,
    clientInfo: config.clientInfo,
    stderr: (chunk) => {
      for (const line of chunk.split("\n")) if (line.trim()) config.log(line);
    },
  });
  client.onRequestPermission((params, token) => handlers.permission(params, token));
  client.onToolCall((params, token) => handlers.toolCall(params, token));
  client.onReadTextFile((params) => readTextFile(handlers.documents, params));
  client.onWriteTextFile((params) => writeTextFile(handlers.documents, params));
  if (handlers.terminals) client.useTerminals(handlers.terminals);
  const elicitation = handlers.elicitation;
  if (elicitation) client.onElicitation((params, token) => elicitation(params, token));
  const failed = new Promise<never>((_, reject) => {
    client.process?.once("error", (err) => reject(new Error(`cannot start ${config.command}: ${err.message}`)));
  });
  failed.catch(() => undefined); // a late spawn error is reported through onClose instead
  try {
    await Promise.race([client.initialize(), failed]);
  } catch (err) {
    await client.stop(2000);
    throw err;
  }
  return client;
}
