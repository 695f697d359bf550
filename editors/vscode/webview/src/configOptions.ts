/**
 * The pickers' state read from ACP session config options (`configOptions` of
 * `session/new` / `session/load` / `set_config_option`, and the
 * `config_option_update` the server sends when one changes, here or in another
 * window). Shared by the host's controller and the page's reducer, so both read the
 * options one way.
 */
import type { SessionConfigOption } from "@threadline/client";
import type { ModelChoice } from "./messages";

/** Built-in tools (`builtinTools`): the server's `"on"` / `"off"`. */
export type BuiltinTools = "on" | "off";

export interface PickerState {
  models?: ModelChoice[];
  currentModel?: string;
  modes?: ModelChoice[];
  currentMode?: string;
  builtinTools?: BuiltinTools;
}

/** What the options say of the model, mode and built-in tools pickers (absent: not said). */
export function pickerState(options: readonly SessionConfigOption[] | null | undefined): PickerState {
  const state: PickerState = {};
  for (const option of options ?? []) {
    const choices = (option.options ?? []).map((o) => ({ id: o.value, name: o.name, description: o.description ?? null }));
    if (option.id === "model") {
      state.currentModel = option.currentValue;
      if (choices.length) state.models = choices;
    } else if (option.id === "mode") {
      state.currentMode = option.currentValue;
      if (choices.length) state.modes = choices;
    } else if (option.id === "builtinTools") {
      state.builtinTools = option.currentValue === "off" ? "off" : "on";
    }
  }
  return state;
}
