/** Public surface of `@threadline/client`. */
export { ThreadlineClient } from "./client";
export type {
  ClientOptions,
  NewSessionOptions,
  ServerRequestHandler,
  ServerRequestName,
  ServerRequests,
} from "./client";
export {
  ChildProcessTerminals,
  type TerminalExit,
  type TerminalInfo,
} from "./terminals";
export { defaultCommand, spawnServer, waitForExit, type SpawnOptions } from "./spawn";
export { errorName, isRpcError, ResponseError } from "./errors";
export * from "./types";
export { CancellationTokenSource, type CancellationToken, type Disposable } from "vscode-jsonrpc/node";
