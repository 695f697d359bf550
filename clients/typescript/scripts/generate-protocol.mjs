#!/usr/bin/env node
// @ts-check
/**
 * Generates src/generated/protocol.ts from protocol/schema.json, the one source of the
 * wire shapes (the Python pydantic models generate that schema). No type in this
 * package is copied by hand from the protocol: they all come out of this script.
 *
 *   node scripts/generate-protocol.mjs            rewrite src/generated/protocol.ts
 *   node scripts/generate-protocol.mjs --check    regenerate into a temp file and exit 1
 *                                                 if it differs from the checked-in one
 *   --schema PATH / --out PATH                    override the default locations
 *
 * The schema is pydantic's "validation" JSON Schema (draft 2020-12) plus three
 * Threadline tables: `methods`, `errorCodes` and the protocol versions. Only the subset
 * of JSON Schema that pydantic emits is handled; anything else fails loudly so a new
 * construct in the models cannot silently turn into `unknown`.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const packageRoot = resolve(here, "..");
const defaultSchema = resolve(packageRoot, "../../protocol/schema.json");
const defaultOut = resolve(packageRoot, "src/generated/protocol.ts");

/** Keywords that only constrain values; they become doc comments, not types. */
const DOC_ONLY = new Set([
  "title", "description", "default", "minLength", "maxLength", "minimum", "maximum",
  "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "pattern", "format",
  "discriminator", "examples",
]);
const TYPE_KEYS = new Set([
  "$ref", "const", "enum", "anyOf", "oneOf", "type", "items", "properties",
  "required", "additionalProperties",
]);
const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * @typedef {{[key: string]: any}} Schema
 */

/** @param {string} ref */
function refName(ref) {
  const prefix = "#/$defs/";
  if (!ref.startsWith(prefix)) throw new Error(`unsupported $ref ${ref}`);
  return ref.slice(prefix.length);
}

/** @param {string} key */
function propKey(key) {
  return IDENT.test(key) ? key : JSON.stringify(key);
}

/** @param {Schema} schema @param {string} where */
function assertKnownKeys(schema, where) {
  for (const key of Object.keys(schema)) {
    if (!DOC_ONLY.has(key) && !TYPE_KEYS.has(key)) {
      throw new Error(`${where}: unsupported JSON Schema keyword "${key}"`);
    }
  }
}

/** @param {string[]} members */
function union(members) {
  const unique = [...new Set(members)];
  if (unique.includes("unknown")) return "unknown";
  return unique.join(" | ");
}

/** Wraps a union or function-ish type in parentheses before `[]` is appended. @param {string} t */
function arrayOf(t) {
  return /[|&\s]/.test(t) && !t.startsWith("{") ? `(${t})[]` : `${t}[]`;
}

/**
 * The TypeScript type of a schema, inline.
 * @param {Schema | boolean} schema @param {string} where @param {string} indent
 * @returns {string}
 */
function typeOf(schema, where, indent) {
  if (schema === false) return "never";
  if (schema === true || Object.keys(schema).length === 0) return "unknown";
  assertKnownKeys(schema, where);
  if (schema.$ref) return refName(schema.$ref);
  if ("const" in schema) return JSON.stringify(schema.const);
  if (schema.enum) return union(schema.enum.map((/** @type {unknown} */ v) => JSON.stringify(v)));
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) {
    return union(
      alternatives.map((/** @type {Schema} */ s, /** @type {number} */ i) =>
        typeOf(s, `${where}[${i}]`, indent),
      ),
    );
  }
  const type = schema.type;
  if (Array.isArray(type)) {
    return union(type.map((t) => typeOf({ ...schema, type: t }, where, indent)));
  }
  switch (type) {
    case "string":
      return "string";
    case "integer":
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array":
      return arrayOf(schema.items ? typeOf(schema.items, `${where}.items`, indent) : "unknown");
    case "object":
      return objectLiteral(schema, where, indent);
    case undefined:
      // pydantic's `Any` field: no type at all, only a title/default.
      return "unknown";
    default:
      throw new Error(`${where}: unsupported type ${JSON.stringify(type)}`);
  }
}

/**
 * Doc comment lines for a schema: its description plus the constraints a caller must
 * respect (the server validates them; the type system cannot say them).
 * @param {Schema} schema
 */
function docLines(schema) {
  /** @type {string[]} */
  const lines = [];
  if (typeof schema.description === "string") {
    lines.push(...schema.description.split("\n").map((l) => l.trimEnd()));
  }
  const constraints = [
    "minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems", "pattern",
  ]
    .filter((k) => k in schema)
    .map((k) => `${k} ${JSON.stringify(schema[k])}`);
  if (constraints.length) lines.push(`Constraints: ${constraints.join(", ")}.`);
  if ("default" in schema && schema.default !== null && !("const" in schema)) {
    lines.push(`@default ${JSON.stringify(schema.default)}`);
  }
  return lines;
}

/** @param {string[]} lines @param {string} indent */
function comment(lines, indent) {
  if (!lines.length) return "";
  const safe = lines.map((l) => l.replaceAll("*/", "*\\/"));
  if (safe.length === 1) return `${indent}/** ${safe[0]} */\n`;
  return `${indent}/**\n${safe.map((l) => `${indent} * ${l}`.trimEnd()).join("\n")}\n${indent} */\n`;
}

/**
 * Members of an object type. A property is required when the schema says so, and also
 * when it carries a `const`: pydantic gives discriminators (`type`, `sessionUpdate`) a
 * default, which drops them from `required`, yet they are always on the wire and the
 * unions narrow on them.
 * @param {Schema} schema @param {string} where @param {string} indent
 */
function members(schema, where, indent) {
  const required = new Set(schema.required ?? []);
  const props = /** @type {Record<string, Schema>} */ (schema.properties ?? {});
  let out = "";
  for (const [key, prop] of Object.entries(props)) {
    const optional = !required.has(key) && !("const" in prop);
    out += comment(docLines(prop), indent);
    out += `${indent}${propKey(key)}${optional ? "?" : ""}: ${typeOf(prop, `${where}.${key}`, indent)};\n`;
  }
  const extra = schema.additionalProperties;
  if (extra === true) {
    out += `${indent}/** Peers may add fields (ACP extensibility). */\n`;
    out += `${indent}[key: string]: unknown;\n`;
  } else if (extra && typeof extra === "object") {
    out += `${indent}[key: string]: ${typeOf(extra, `${where}.*`, indent)};\n`;
  }
  return out;
}

/** @param {Schema} schema @param {string} where @param {string} indent */
function objectLiteral(schema, where, indent) {
  if (!schema.properties && (schema.additionalProperties === undefined || schema.additionalProperties === true)) {
    return "{ [key: string]: unknown }";
  }
  const inner = indent + "  ";
  return `{\n${members(schema, where, inner)}${indent}}`;
}

/** @param {string} name @param {Schema} schema */
function declaration(name, schema) {
  const head = comment(docLines({ description: schema.description }), "");
  if (schema.type === "object" && !schema.anyOf && !schema.oneOf) {
    assertKnownKeys(schema, name);
    return `${head}export interface ${name} {\n${members(schema, name, "  ")}}\n`;
  }
  return `${head}export type ${name} = ${typeOf(schema, name, "")};\n`;
}

/**
 * @param {Schema | null} ref
 * @param {string} where
 */
function methodSide(ref, where) {
  // `null` in the method table means "no model": either no params at all (shutdown,
  // exit) or a shape the protocol package has not modelled yet. Both stay `unknown`
  // here so nothing pretends to be typed when it is not.
  return ref === null ? "unknown" : typeOf(ref, where, "    ");
}

/** @param {Schema} schema */
export function generate(schema) {
  const defs = /** @type {Record<string, Schema>} */ (schema.$defs ?? {});
  const methods = /** @type {Record<string, Schema>} */ (schema.methods ?? {});
  const codes = /** @type {Record<string, number>} */ (schema.errorCodes ?? {});
  let out = "";
  out += "// Generated by clients/typescript/scripts/generate-protocol.mjs from protocol/schema.json.\n";
  out += "// Do not edit: change the pydantic models, regenerate protocol/schema.json, then run\n";
  out += "// `npm run generate` in clients/typescript. `npm run check-types` fails on drift.\n";
  out += "/* eslint-disable */\n\n";
  out += `/** ACP protocol version spoken by the server. */\n`;
  out += `export const ACP_PROTOCOL_VERSION = ${JSON.stringify(schema.acpProtocolVersion)} as const;\n`;
  out += `/** Version of Threadline's extensions to ACP. */\n`;
  out += `export const THREADLINE_PROTOCOL_VERSION = ${JSON.stringify(schema.threadlineProtocolVersion)} as const;\n\n`;
  out += "/** JSON-RPC error codes the server answers with (threadline_protocol/errors.py; docs/protocol.md says when). */\n";
  out += "export const ErrorCodes = {\n";
  for (const [name, code] of Object.entries(codes).sort(([a], [b]) => a.localeCompare(b))) {
    out += `  ${name}: ${code},\n`;
  }
  out += "} as const;\n";
  out += "export type ErrorCodeName = keyof typeof ErrorCodes;\n";
  out += "export type ErrorCode = (typeof ErrorCodes)[ErrorCodeName];\n\n";

  for (const name of Object.keys(defs).sort()) {
    out += declaration(name, defs[name]) + "\n";
  }

  const names = Object.keys(methods).sort();
  out += "/** Every method of the protocol with its direction, kind, params and result. */\n";
  out += "export interface ProtocolMethods {\n";
  for (const name of names) {
    const m = methods[name];
    out += comment(docLines({ description: m.description }), "  ");
    out += `  ${JSON.stringify(name)}: {\n`;
    out += `    direction: ${JSON.stringify(m.direction)};\n`;
    out += `    kind: ${JSON.stringify(m.kind)};\n`;
    out += `    params: ${methodSide(m.params, `${name}.params`)};\n`;
    out += `    result: ${methodSide(m.result, `${name}.result`)};\n`;
    out += "  };\n";
  }
  out += "}\n\n";
  out += "/** The method table at run time (direction and kind), for tests and dispatch. */\n";
  out += "export const METHODS = {\n";
  for (const name of names) {
    const m = methods[name];
    out += `  ${JSON.stringify(name)}: { direction: ${JSON.stringify(m.direction)}, kind: ${JSON.stringify(m.kind)} },\n`;
  }
  out += "} as const;\n";
  out += "export type MethodName = keyof ProtocolMethods;\n";
  out += "export type ClientRequestMethod = {\n";
  out += '  [M in MethodName]: ProtocolMethods[M]["direction"] extends "client_to_server"\n';
  out += '    ? ProtocolMethods[M]["kind"] extends "request" ? M : never\n';
  out += "    : never;\n";
  out += "}[MethodName];\n";
  out += "export type ClientNotificationMethod = {\n";
  out += '  [M in MethodName]: ProtocolMethods[M]["direction"] extends "client_to_server"\n';
  out += '    ? ProtocolMethods[M]["kind"] extends "notification" ? M : never\n';
  out += "    : never;\n";
  out += "}[MethodName];\n";
  out += "export type ServerRequestMethod = {\n";
  out += '  [M in MethodName]: ProtocolMethods[M]["direction"] extends "server_to_client"\n';
  out += '    ? ProtocolMethods[M]["kind"] extends "request" ? M : never\n';
  out += "    : never;\n";
  out += "}[MethodName];\n";
  return out;
}

/** @param {string[]} argv */
function parseArgs(argv) {
  const args = { check: false, schema: defaultSchema, out: defaultOut };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--check") args.check = true;
    else if (a === "--schema") args.schema = resolve(argv[++i]);
    else if (a === "--out") args.out = resolve(argv[++i]);
    else throw new Error(`unknown argument ${a}`);
  }
  return args;
}

/** @param {string} a @param {string} b */
function firstDifference(a, b) {
  const la = a.split("\n");
  const lb = b.split("\n");
  for (let i = 0; i < Math.max(la.length, lb.length); i++) {
    if (la[i] !== lb[i]) {
      return `line ${i + 1}:\n  checked in: ${la[i] ?? "<end of file>"}\n  generated:  ${lb[i] ?? "<end of file>"}`;
    }
  }
  return "";
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const schema = JSON.parse(readFileSync(args.schema, "utf8"));
  const label = relative(resolve(packageRoot, "../.."), args.schema).split("\\").join("/");
  const text = generate(schema);
  if (args.check) {
    const tmpDir = mkdtempSync(join(tmpdir(), "threadline-protocol-"));
    const tmp = join(tmpDir, "protocol.ts");
    writeFileSync(tmp, text);
    let current = "";
    try {
      current = readFileSync(args.out, "utf8");
    } catch {
      current = "";
    }
    if (current !== text) {
      console.error(
        `${relative(process.cwd(), args.out)} is stale (regenerated copy: ${tmp}); ` +
          `run \`npm run generate\` in clients/typescript.\nFirst difference at ${firstDifference(current, text)}`,
      );
      process.exit(1);
    }
    rmSync(tmpDir, { recursive: true, force: true }); // kept only when it differs, for a diff
    console.log(`${relative(process.cwd(), args.out)} matches ${label}`);
    return;
  }
  mkdirSync(dirname(args.out), { recursive: true });
  writeFileSync(args.out, text);
  console.log(`wrote ${relative(process.cwd(), args.out)}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main();
}
