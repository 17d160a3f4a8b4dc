// What the spot and warmup policy editors share: saving or deleting through the API with the
// admin prompt on 401/403, and the form's footer (error, Save, Delete, Cancel).
import { useState } from "react";
import { ApiError } from "../api.ts";
import type { PageCtx } from "../ctx.ts";

export interface PolicyAction {
  busy: boolean;
  error: string | undefined;
  /**
   * A save refused because a field is managed elsewhere (409: "managed by argocd-controller:
   * change it in Git"): the footer then offers to force it, which re-runs it with force.
   */
  conflict: (() => Promise<void>) | undefined;
  /**
   * Runs a save or delete (`force` true only when the user forces it after a conflict); on
   * success refreshes the page and closes the editor. On 401/403 the admin prompt names the verb:
   * "To delete spot policies, sign in…".
   */
  act: (fn: (force: boolean) => Promise<unknown>, verb?: "save" | "delete", force?: boolean) => Promise<void>;
}

/** `what`: the policies edited ("spot policies"). */
export function usePolicyAction(ctx: PageCtx, what: string, onDone: () => void): PolicyAction {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const [conflict, setConflict] = useState<(() => Promise<void>) | undefined>();
  const act = async (
    fn: (force: boolean) => Promise<unknown>,
    verb: "save" | "delete" = "save",
    force = false,
  ): Promise<void> => {
    setBusy(true);
    setError(undefined);
    setConflict(undefined);
    try {
      await fn(force);
      ctx.refresh();
      onDone();
    } catch (err) {
      if (err instanceof ApiError && (err.status === 401 || err.status === 403))
        ctx.askAdmin(`${verb} ${what}`);
      else {
        setError((err as Error).message);
        // Nothing changed; forcing takes the fields over from their manager (Git's next sync
        // will then conflict with the console instead).
        if (err instanceof ApiError && err.status === 409 && verb === "save")
          setConflict(() => () => act(fn, verb, true));
      }
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, conflict, act };
}

export function EditorFooter(p: {
  action: PolicyAction;
  invalid: boolean;
  /** Present when there is a saved policy to delete. */
  onDelete?: () => Promise<unknown>;
  onDone: () => void;
}) {
  const { busy, error, act, conflict } = p.action;
  const onDelete = p.onDelete;
  return (
    <>
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
      <div className="buttons">
        <button type="submit" disabled={busy || p.invalid}>
          Save
        </button>
        {conflict ? (
          <button type="button" className="danger" disabled={busy} onClick={() => void conflict()}>
            Force (take the field over)
          </button>
        ) : null}
        {onDelete ? (
          <button
            type="button"
            className="danger"
            disabled={busy}
            onClick={() => void act(onDelete, "delete")}
          >
            Delete policy
          </button>
        ) : null}
        <button type="button" onClick={p.onDone}>
          Cancel
        </button>
      </div>
    </>
  );
}
