/**
 * The agent's question (ACP `elicitation/create`, form mode) as a form above the input:
 * one field per property of the requested schema (a select for an `enum`, a checkbox
 * for a boolean, a number box for numbers), Answer / Decline / Dismiss. The answer goes
 * to the host as `elicitationAnswer`; the host answers the server.
 */
import type { CreateElicitationParams, CreateElicitationResult } from "@threadline/client";
import type { WebviewMessage } from "./messages";

interface PropertySchema {
  type?: string;
  title?: string;
  description?: string;
  enum?: unknown[];
  default?: unknown;
  items?: { enum?: unknown[] };
}

/** The form's values as the schema types them (null: a required field left empty). */
export function readAnswers(
  params: CreateElicitationParams,
  raw: Record<string, string | boolean | string[]>,
): { content: NonNullable<CreateElicitationResult["content"]>; missing: string[] } {
  const props = (params.requestedSchema.properties ?? {}) as Record<string, PropertySchema>;
  const required = new Set(params.requestedSchema.required ?? []);
  const content: NonNullable<CreateElicitationResult["content"]> = {};
  const missing: string[] = [];
  for (const [name, schema] of Object.entries(props)) {
    const value = raw[name];
    if (schema.type === "boolean") {
      content[name] = value === true;
      continue;
    }
    if (Array.isArray(value)) {
      if (value.length) content[name] = value;
      else if (required.has(name)) missing.push(schema.title ?? name);
      continue;
    }
    const text = typeof value === "string" ? value.trim() : "";
    if (!text) {
      if (required.has(name)) missing.push(schema.title ?? name);
      continue;
    }
    if (schema.type === "number" || schema.type === "integer") {
      const n = Number(text);
      if (!Number.isFinite(n) || (schema.type === "integer" && !Number.isInteger(n))) {
        missing.push(`${schema.title ?? name} (a${schema.type === "integer" ? " whole" : ""} number)`);
        continue;
      }
      content[name] = n;
    } else {
      content[name] = text;
    }
  }
  return { content, missing };
}

function field(name: string, schema: PropertySchema, required: boolean): HTMLElement {
  const label = document.createElement("label");
  label.className = "elicitation-field";
  const caption = document.createElement("span");
  caption.textContent = `${schema.title ?? name}${required ? " *" : ""}`;
  let input: HTMLElement;
  const choices = schema.enum ?? schema.items?.enum;
  if (choices) {
    const select = document.createElement("select");
    if (schema.type === "array") select.multiple = true;
    else select.append(new Option("", ""));
    for (const c of choices) select.append(new Option(String(c), String(c)));
    input = select;
  } else if (schema.type === "boolean") {
    const box = document.createElement("input");
    box.type = "checkbox";
    box.checked = schema.default === true;
    input = box;
  } else {
    const box = document.createElement("input");
    box.type = schema.type === "number" || schema.type === "integer" ? "number" : "text";
    if (schema.type === "integer") box.step = "1";
    if (typeof schema.default === "string" || typeof schema.default === "number") box.value = String(schema.default);
    input = box;
  }
  input.setAttribute("name", name);
  input.setAttribute("aria-label", schema.title ?? name);
  label.append(caption, input);
  if (schema.description && schema.description !== schema.title) {
    const hint = document.createElement("small");
    hint.textContent = schema.description;
    label.append(hint);
  }
  return label;
}

function button(text: string, className: string, title: string): HTMLButtonElement {
  const b = document.createElement("button");
  b.type = className === "primary" ? "submit" : "button";
  b.className = className;
  b.textContent = text;
  b.title = title;
  return b;
}

/** Draw (or clear) the form; it is built once per request, so typing is never lost. */
export function renderElicitation(
  form: HTMLFormElement,
  request: { id: number; params: CreateElicitationParams } | null,
  post: (message: WebviewMessage) => void,
): void {
  const id = request ? String(request.id) : "";
  if (form.dataset.requestId === id) return;
  form.dataset.requestId = id;
  form.hidden = request === null;
  if (!request) {
    form.replaceChildren();
    form.onsubmit = null;
    return;
  }
  const { params } = request;
  const question = document.createElement("div");
  question.className = "elicitation-question";
  question.textContent = params.message;
  const props = (params.requestedSchema.properties ?? {}) as Record<string, PropertySchema>;
  const required = new Set(params.requestedSchema.required ?? []);
  const fields = Object.entries(props).map(([name, schema]) => field(name, schema, required.has(name)));
  const problem = document.createElement("div");
  problem.className = "elicitation-problem";
  const answer = button("Answer", "primary", "Send this answer to the agent");
  const decline = button("Decline", "decline", "Tell the agent you will not answer");
  const dismiss = button("Dismiss", "dismiss", "Close the question without answering");
  const actions = document.createElement("div");
  actions.className = "elicitation-actions";
  actions.append(decline, dismiss, answer);
  form.replaceChildren(question, ...fields, problem, actions);
  const reply = (result: CreateElicitationResult) => post({ type: "elicitationAnswer", id: request.id, result });
  form.onsubmit = (event) => {
    event.preventDefault();
    const raw: Record<string, string | boolean | string[]> = {};
    for (const name of Object.keys(props)) {
      const input = form.querySelector<HTMLInputElement | HTMLSelectElement>(`[name="${CSS.escape(name)}"]`);
      if (!input) continue;
      if (input instanceof HTMLInputElement && input.type === "checkbox") raw[name] = input.checked;
      else if (input instanceof HTMLSelectElement && input.multiple) raw[name] = [...input.selectedOptions].map((o) => o.value);
      else raw[name] = input.value;
    }
    const { content, missing } = readAnswers(params, raw);
    if (missing.length) {
      problem.textContent = `Still needed: ${missing.join(", ")}`;
      return;
    }
    reply({ action: "accept", content });
  };
  decline.addEventListener("click", () => reply({ action: "decline" }));
  dismiss.addEventListener("click", () => reply({ action: "cancel" }));
  (form.querySelector("input, select") as HTMLElement | null)?.focus();
}
