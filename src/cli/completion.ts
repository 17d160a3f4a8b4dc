// `wave completion bash|zsh`: a shell completion script generated from the command table, so a
// command or flag added there completes without editing the script.
import { configFlags } from "../config/config.ts";
import type { Command } from "./types.ts";
import { UsageError } from "./errors.ts";

/** The verbs a command takes as its first word. */
const VERBS: Record<string, string[]> = {
  spot: ["list", "set", "delete"],
  warmup: ["list", "set", "delete"],
  whatif: ["spot", "warmup"],
  completion: ["bash", "zsh"],
};

/** Every flag a command accepts: its own and the shared ones its help lists. */
export function commandFlags(c: Command): string[] {
  // The usage text names the shared flags it explains itself (--cluster-id of spot/warmup/whatif).
  const inUsage = [...(c.usage ?? "").matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1] ?? "");
  const named = inUsage.filter((f) => configFlags().includes(f));
  const all = [...Object.keys(c.options ?? {}), ...named, ...configFlags(c.globals), "help"];
  return [...new Set(all)].map((f) => `--${f}`);
}

/** A bash completion function (zsh runs it through bashcompinit). */
export function bashCompletion(list: readonly Command[]): string {
  const names = [...list.map((c) => c.name), "version", "help"];
  const cases = list
    .map((c) => {
      const verbs = VERBS[c.name] ?? [];
      return `    ${c.name}) words="${[...verbs, ...commandFlags(c)].join(" ")}" ;;`;
    })
    .join("\n");
  return [
    "# wave completion: source it, e.g. `source <(wave completion bash)`",
    "_wave() {",
    '  local cur="${COMP_WORDS[COMP_CWORD]}" words',
    '  if [ "$COMP_CWORD" -eq 1 ]; then',
    `    COMPREPLY=($(compgen -W "${names.join(" ")}" -- "$cur"))`,
    "    return",
    "  fi",
    '  case "${COMP_WORDS[1]}" in',
    cases,
    '    *) words="" ;;',
    "  esac",
    '  COMPREPLY=($(compgen -W "$words" -- "$cur"))',
    "}",
    "complete -o default -F _wave wave",
    "",
  ].join("\n");
}

/** The script for `shell`. */
export function completionScript(shell: string | undefined, list: readonly Command[]): string {
  if (shell === "bash") return bashCompletion(list);
  if (shell === "zsh") return "autoload -U +X bashcompinit && bashcompinit\n" + bashCompletion(list);
  throw new UsageError(`wave completion: expected bash or zsh, got "${shell ?? ""}"`);
}
