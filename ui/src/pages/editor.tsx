// What the spot and warmup policy editors share: saving or deleting through the API with the
// admin prompt on 401/403, and the form's footer (error, Save, Delete, Cancel).
import { useState } from "react";
import { ApiError } from "../api.ts";
import type { PageCtx } from "../ctx.ts";

export interface PolicyAction {
  busy: boolean;
  error: string | undefined;
  /**
   * Runs a save or delete; on success refreshes the page and closes the editor. On 401/403 the
   * admin prompt names the verb: "To delete spot policies, sign in…".
   */
  act: (fn: () => Promise<unknown>, verb?: "save" | "delete") => Promise<void>;
}

/** `what`: the policies edited ("spot policies"). */
export function usePolicyAction(ctx: PageCtx, what: string, onDone: () => void): PolicyAction {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const act = async (fn: () => Promise<unknown>, verb: "save" | "delete" = "save"): Promise<void> => {
    setBusy(true);
    setError(undefined);
    try {
      await fn();
      ctx.refresh();
      onDone();
    } catch (err) {
      if (err instanceof ApiError && (err.status === 401 || err.status === 403))
        ctx.askAdmin(`${verb} ${what}`);
      else setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, act };
}

export function EditorFooter(p: {
  action: PolicyAction;
  invalid: boolean;
  /** Present when there is a saved policy to delete. */
  onDelete?: () => Promise<unknown>;
  onDone: () => void;
}) {
  const { busy, error, act } = p.action;
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
