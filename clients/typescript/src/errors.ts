/**
 * Recognising the server's JSON-RPC errors. vscode-jsonrpc rejects a failed request with
 * a `ResponseError`; these helpers compare its code with the generated `ErrorCodes`
 * table so callers never write a magic number.
 */
import { ResponseError } from "vscode-jsonrpc/node";
import { ErrorCodes, type ErrorCodeName } from "./generated/protocol";

export { ResponseError };

/** True when `err` is a JSON-RPC error response, optionally with the named code. */
export function isRpcError(err: unknown, name?: ErrorCodeName): err is ResponseError<unknown> {
  if (!(err instanceof ResponseError)) return false;
  return name === undefined || err.code === ErrorCodes[name];
}

/** The protocol name of an error code (`SESSION_NOT_FOUND` for -32002), if it has one. */
export function errorName(code: number): ErrorCodeName | undefined {
  const entry = Object.entries(ErrorCodes).find(([, value]) => value === code);
  return entry?.[0] as ErrorCodeName | undefined;
}
